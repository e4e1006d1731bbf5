"""Write one suite's lm-eval task folder: the bits-per-byte tasks from the config's data sets, and
every other task (lm-eval's, the project's: the toy's, EGSM) included with its data redirected."""

from mathneuro.evaluate import is_bpb_task, write_bpb_tasks
from mathneuro.logs import end_job, log_to

with log_to(snakemake.log[0]) as log:
    tasks, lm_eval, out = snakemake.params.tasks, snakemake.params.lm_eval, snakemake.output[0]
    bpb = snakemake.params.bpb
    if bpb:
        counts = write_bpb_tasks(bpb["specs"], out, local_data=bpb["local_data"])
        for name, count in counts.items():
            log.info("%s: bits per byte of %d held-out texts", name, count)
    others = [task for task in tasks if not is_bpb_task(task)]
    if others:
        from mathneuro.tasks import write_suite

        manifest = write_suite(others, out, include_path=lm_eval["include_path"], local_data=lm_eval["local_data"])
        for name, leaf in manifest["leaves"].items():
            log.info("%s: %s, data %s", name, leaf["source"], leaf["data_files"] or "from the hub")

end_job()
