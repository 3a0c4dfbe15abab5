"""fastformer: the Fastformer model (Wu et al., arXiv:2108.09084) as ops, layers and Hugging Face models.

The package is tiered: `fastformer.ops` and `fastformer.layers` need torch alone, `fastformer.models` needs
transformers. `import fastformer` itself imports nothing heavy: each public name is loaded from its tier on first use
(module `__getattr__`, in the spirit of transformers' own lazy module), so `import fastformer` and `fastformer --help`
stay fast and a torch-only install can still use the op and the layers.
"""

from __future__ import annotations

import importlib
import sys

from fastformer.version import __version__

# public name -> the module that defines it
_EXPORTS = {
    "AttentionPooling": "fastformer.layers",
    "FastformerAttention": "fastformer.layers",
    "FastformerEncoder": "fastformer.layers",
    "FastformerLayer": "fastformer.layers",
    "FeedForward": "fastformer.layers",
    "fastformer_attention": "fastformer.ops",
    "fastformer_attention_reference": "fastformer.ops",
    "count_parameters": "fastformer.parameters",
    "parameter_report": "fastformer.parameters",
    "PRESETS": "fastformer.presets",
    "build_encoder": "fastformer.presets",
    # the models need transformers; importing one registers them all with the Auto classes
    "FastformerConfig": "fastformer.models.fastformer",
    "FastformerForCausalLM": "fastformer.models.fastformer",
    "FastformerForConditionalGeneration": "fastformer.models.fastformer",
    "FastformerForMaskedLM": "fastformer.models.fastformer",
    "FastformerForNewsRecommendation": "fastformer.models.fastformer",
    "FastformerForReplacedTokenDetection": "fastformer.models.fastformer",
    "FastformerForSequenceClassification": "fastformer.models.fastformer",
    "FastformerModel": "fastformer.models.fastformer",
    # what a model read: per-word additive-attention weights, HTML pages and pictures
    "explain": "fastformer.interpret",
    "explain_user": "fastformer.interpret",
}

__all__ = ["__version__", *_EXPORTS]


# transformers' Auto classes resolve a `fastformer` folder once fastformer.models has registered the model type. A
# user writes `import fastformer` and then `AutoModelForSequenceClassification.from_pretrained(folder)`, without
# importing fastformer.models; registering at `import fastformer` would load transformers (seconds, and not at all in
# a torch-only install). So the Auto classes' entry points (AutoConfig.from_pretrained, the Auto models'
# from_pretrained / from_config) register fastformer on their first call: wrapped as soon as transformers loads its
# Auto modules (an import hook), or at once if it has. Registering inside that import itself would re-enter
# transformers' lazy module mid-import, hence the first call. `import fastformer` imports nothing of transformers.
#
# module -> (its public Auto classes that fastformer registers with, their entry points) to wrap; each is wrapped
# right after its own module has run. Public names only: each Auto class holds its own copy of the entry points.
_AUTO_ENTRY_POINTS = {
    "transformers.models.auto.configuration_auto": (("AutoConfig",), ("from_pretrained",)),
    "transformers.models.auto.modeling_auto": (
        (
            "AutoModel",
            "AutoModelForSequenceClassification",
            "AutoModelForCausalLM",
            "AutoModelForMaskedLM",
            "AutoModelForPreTraining",
            "AutoModelForSeq2SeqLM",
        ),
        ("from_pretrained", "from_config"),
    ),
}
_wrapped: list = []  # (owner, name, original) of every wrapped entry point


def _register_now() -> None:
    """Put every wrapped entry point back and import fastformer.models (which registers the model type)."""
    while _wrapped:
        owner, name, original = _wrapped.pop()
        setattr(owner, name, original)
    if "fastformer.models" not in sys.modules:
        importlib.import_module("fastformer.models")


def _wrap_entry_points(module) -> None:
    """Wrap a loaded Auto module's entry points so that their first call registers fastformer first."""
    class_names, names = _AUTO_ENTRY_POINTS[module.__name__]
    for owner in (getattr(module, class_name, None) for class_name in class_names):
        for name in names:
            if owner is None or name not in owner.__dict__:
                continue
            original = owner.__dict__[name]
            _wrapped.append((owner, name, original))

            # the original is called itself (bound to the class asked), not looked up again: a subclass of an Auto
            # class inherits this wrapper until the registration puts the original back
            def wrapper(cls, *args, __original=original, **kwargs):
                _register_now()
                return __original.__get__(None, cls)(*args, **kwargs)

            setattr(owner, name, classmethod(wrapper))


class _AutoRegistration:
    """A meta path finder that lets transformers' Auto modules load, then wraps their entry points."""

    def find_spec(self, name, path=None, target=None):
        if name not in _AUTO_ENTRY_POINTS:
            return None
        for finder in sys.meta_path:
            if isinstance(finder, _AutoRegistration) or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec

        class Loader:
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                if "fastformer.models" not in sys.modules:
                    _wrap_entry_points(module)

        spec.loader = Loader()
        return spec


def _install_auto_registration() -> None:
    if "fastformer.models" in sys.modules:
        return
    for module in [sys.modules.get(n) for n in _AUTO_ENTRY_POINTS]:
        if module is not None:  # transformers already loaded it
            _wrap_entry_points(module)
    if not all(n in sys.modules for n in _AUTO_ENTRY_POINTS):
        sys.meta_path.insert(0, _AutoRegistration())


_install_auto_registration()


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fastformer' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # loaded once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
