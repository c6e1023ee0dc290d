"""Typed errors. Every message is one line a user can act on; the CLI and the app show it as is."""

from __future__ import annotations


class BiaslensError(Exception):
    """Base class of every error biaslens raises on purpose."""


class ModelLoadError(BiaslensError):
    """A model or tokenizer could not be loaded."""


class HubUnreachableError(ModelLoadError):
    """The Hugging Face hub cannot be reached and the model is not cached locally."""


class UnsupportedModelError(ModelLoadError):
    """The model is neither a masked nor a causal language model (a sequence-to-sequence model, an encoder without a head, ...)."""


class NotMaskedLMError(UnsupportedModelError):
    """The model has no (trained) language-model head: a masked LM without its MLM head, a causal LM without its LM head."""


class ModelNotAllowedError(ModelLoadError):
    """A local model folder outside the folders a server allows (`BIASLENS_MODEL_DIRS`)."""


class DataNotAllowedError(BiaslensError):
    """A dataset file or data folder outside the folders a server allows (`BIASLENS_DATA_DIRS`)."""


class ServerConfigError(BiaslensError):
    """A server setting (a `BIASLENS_*` environment variable) has a value biaslens cannot use."""


class InputError(BiaslensError):
    """A sentence or argument cannot be scored (empty, too long, identical pair, ...)."""


class MetricUnavailableError(InputError):
    """A metric this model cannot give (e.g. AULA for an architecture that returns no attention weights)."""


class OutputError(BiaslensError):
    """An output folder or file cannot be written (read-only, a file where a folder should be, disk full, ...)."""


class NumericalError(BiaslensError):
    """A model's outputs are not finite numbers (NaN or infinity): its weights are broken."""


class LimitError(InputError):
    """Work a shared server will not do (or stopped): above an operator's limit, switched off, or the server is busy."""


class JobCancelled(BiaslensError):
    """A job stopped because the session that started it went away, or the server is shutting down."""


class DatasetError(BiaslensError):
    """A dataset file is missing or malformed. Messages name the file, the row and the problem."""

    def __init__(self, message: str, *, path: str | None = None, row: int | None = None):
        self.path = path
        self.row = row
        where = ""
        if path is not None:
            where = f"{path}"
            if row is not None:
                where += f", row {row}"
            where += ": "
        super().__init__(where + message)


class DatasetNotFoundError(DatasetError):
    """No local copy of a dataset and no way to download it."""
