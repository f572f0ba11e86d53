"""The model: what the policy is, loaded and handled.

    trainable.py    `Model` (something to sample from) and `TrainableModel` (base model + the LoRA we train)
    weights.py      model specs (an alias, a directory, a Hugging Face id) and loading them
    chat_format.py  the Hermes-style tool-calling chat template and its parser
    attention.py    attention for the short batches of CPU sampling and training
    memory.py       giving freed memory back to the operating system

`Model` and `TrainableModel` are imported on first use, so that importing a submodule here loads
no more than it needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcprl.loading import exports

_EXPORTS = {"Model": "mcprl.model.trainable", "TrainableModel": "mcprl.model.trainable"}

if TYPE_CHECKING:
    from mcprl.model.trainable import Model, TrainableModel

__getattr__ = exports(__name__, _EXPORTS)


__all__ = sorted(_EXPORTS)
