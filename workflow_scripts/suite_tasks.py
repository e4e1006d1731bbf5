"""Write one suite's lm-eval task folder: toy and bits-per-byte task YAMLs, and lm-eval's own tasks
with local data."""

from mathneuro.evaluate import write_task_yamls
from mathneuro.logs import log_to

with log_to(snakemake.log[0]) as log:
    tasks, lm_eval, out = snakemake.params.tasks, snakemake.params.lm_eval, snakemake.output[0]
    toy = {task[len("toy_"):]: snakemake.input[task] for task in tasks if task.startswith("toy_")}
    for path in write_task_yamls(toy, out):
        log.info("toy task %s", path)
    bpb = snakemake.params.bpb
    if bpb:
        from mathneuro.evaluate import write_bpb_tasks

        counts = write_bpb_tasks(bpb["specs"], out, split=bpb["split"], local_data=bpb["local_data"])
        for name, count in counts.items():
            log.info("%s: bits per byte of %d held-out texts", name, count)
    others = [task for task in tasks if not task.startswith(("toy_", "bpb_"))]
    if others:
        from mathneuro.tasks import write_suite

        manifest = write_suite(others, out, include_path=lm_eval["include_path"], local_data=lm_eval["local_data"])
        for name, leaf in manifest["leaves"].items():
            log.info("%s: %s, data %s", name, leaf["source"], leaf["data_files"] or "from the hub")
