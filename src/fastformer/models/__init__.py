"""Hugging Face models of the fastformer family. Needs transformers; importing this registers the `fastformer`
model type with the Auto classes (AutoConfig, AutoModel, AutoModelForSequenceClassification, AutoModelForCausalLM,
AutoModelForMaskedLM, AutoModelForSeq2SeqLM), so `import fastformer.models` is all a script needs before
`Auto*.from_pretrained`."""

from fastformer.models.fastformer import *  # noqa: F403
from fastformer.models.fastformer import __all__  # noqa: F401
