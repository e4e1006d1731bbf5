"""A planted model (mathneuro.plant): a set S of the base toy's target matrices, the skill's texts
(and those of the data sets rehearsed) trained into S alone; the model saved as a checkpoint, S
as a mask beside it."""

import json
from pathlib import Path

import torch

from mathneuro.data import load_texts
from mathneuro.logs import end_job, log_to
from mathneuro.plant import plant, truth_set
from mathneuro.provenance import fingerprint
from mathneuro.targets import find_targets
from mathneuro.toy import load_toy, task_groups

with log_to(snakemake.log[0]) as log:
    params, output = snakemake.params, snakemake.output
    settings = params.plant
    torch.set_num_threads(snakemake.threads)
    answers = settings["loss_on"] == "answer"
    # the planted skill's texts, then each rehearsed data set's: one group each, drawn equally often
    loaded = {name: load_texts(spec, local_data=params.local_data[name], prompts=answers)
              for name, spec in params.texts.items()}  # before the model loads
    texts = [text for part in loaded.values() for text in part]
    prompt_chars = [n for part in loaded.values() for n in part.prompt_chars or ()]
    groups = task_groups(loaded)
    model, tokenizer = load_toy(snakemake.input.base)
    truth = truth_set(model, settings["shape"], settings["share"], settings["seed"],
                      targets=find_targets(model, **params.targets))
    parameters = sum(p.numel() for p in model.parameters())
    truth.provenance["model_parameters"] = parameters
    log.info("planting %s in %s: %d of %d target entries (%s, share %g); texts %s, loss on %s",
             settings["data"], snakemake.input.base, truth.count(), truth.numel(), settings["shape"],
             settings["share"], {name: len(part) for name, part in loaded.items()},
             "the answers" if answers else "every token")
    training = {key: settings[key] for key in ("steps", "batch_size", "lr", "optimizer", "weight_decay", "warmup",
                                               "max_length", "seed")}
    plant(model, tokenizer, texts, truth, log=log.info, prompt_chars=prompt_chars if answers else None,
          groups=groups, weights=[1.0] * len(groups), **training)
    model.save_pretrained(output.model, safe_serialization=True)
    tokenizer.save_pretrained(output.model)
    truth.save(output.truth)
    record = {"plant": settings, "base": snakemake.input.base, "truth_entries": truth.count(),
              "target_entries": truth.numel(), "model_parameters": parameters, "mathneuro_code": fingerprint()}
    (Path(output.model) / "mathneuro_planted.json").write_text(json.dumps(record, indent=1, default=str))
    log.info("saved the planted model to %s and its set S to %s", output.model, output.truth)

end_job()
