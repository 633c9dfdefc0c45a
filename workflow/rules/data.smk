# The data: the split of the configured data set (`data.name`; the digits without a data
# section) into standardised training and test parts, and Fashion-MNIST's validation split.
from bnstudy.base.datasets import DIGITS, DataSetError, check_files, data_config

DATA = data_config(config)

# Fashion-MNIST's files: there, and each with the config's sha256, before any job starts
# (one line naming the apt command, or the file). Cluster jobs, which read the Snakefile
# again, leave it to the main process.
if workflow.is_main_process:
    try:
        check_files(DATA)
    except DataSetError as e:
        _fail(str(e))

SPLIT_OUTPUTS = dict(
    x_train="results/data/x_train.npy",
    y_train="results/data/y_train.npy",
    x_test="results/data/x_test.npy",
    y_test="results/data/y_test.npy",
    indices="results/data/split_indices.csv",
    standardisation="results/data/standardisation.csv",
)
if DATA["name"] != DIGITS:
    SPLIT_OUTPUTS |= dict(
        x_validation="results/data/x_validation.npy",
        y_validation="results/data/y_validation.npy",
    )
# The digits' params as they were before the data set was a key (no re-run of their split).
SPLIT_PARAMS = (
    dict(seed=config["split"]["seed"], test_size=config["split"]["test_size"])
    if DATA["name"] == DIGITS
    else dict(seed=config["split"]["seed"], data=canonical(DATA))
)


rule split:
    message:
        "Splitting the data set (%s) into standardised training and test parts" % DATA["name"]
    output:
        **SPLIT_OUTPUTS,
    params:
        **SPLIT_PARAMS,
    resources:
        **job_size(1000 if DATA["name"] == DIGITS else 3000, 5),
    script:
        "../scripts/split.py"


register(rules.split)
