"""The version of biaslens (a base module: imports nothing). `biaslens.__version__` and model manifests read it."""

__version__ = "0.1.0"
