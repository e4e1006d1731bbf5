"""Fill the Hugging Face cache with every model, data set and lm-eval task the config names."""

from mathneuro.data import config_names
from mathneuro.logs import end_job, log_to
from mathneuro.tasks import task_paths

with log_to(snakemake.log[0]) as log:
    import datasets
    from huggingface_hub import snapshot_download
    from lm_eval.tasks import TaskManager, get_task_dict

    params = snakemake.params
    for model in params.models:
        path = snapshot_download(model["path"], revision=model["revision"])
        log.info("model %s -> %s", model["path"], path)
    for spec in params.datasets:
        for name in config_names(spec):
            datasets.load_dataset(spec["path"], name, revision=spec.get("revision"))
            log.info("data set %s (%s) at revision %s", spec["path"], name, spec.get("revision") or "latest")
    if params.tasks:
        get_task_dict(list(params.tasks), TaskManager(include_path=task_paths(params.include_path)))
        log.info("lm-eval tasks %s", params.tasks)

end_job()
