"""PyTorch twins of the zoo specs for `ait-build bench --vs torch,onnxruntime` (imported specs
are compared with their source instead: source_twin.py).

A twin is the library implementation the spec describes (torchvision's ResNet-50 and ViT,
transformers' BertModel, small modules for the test specs) loaded with the spec's own weights,
so both sides compute the same function. Spec weight names are the twins' state_dict names.
Images are NHWC on our side and NCHW for PyTorch; inputs are converted before timing starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ait_build.errors import AitError


@dataclass
class Twin:
    module: object  # torch.nn.Module whose forward returns a tuple of tensors
    to_args: Callable  # our inputs (name -> NumPy array) -> forward's positional torch tensors
    outputs: tuple  # our output names, in forward's order
    input_names: tuple  # forward's argument names (for ONNX export)
    note: str = ""  # said under the table (an imported spec's weights file was replaced)


def _nn():
    import torch
    return torch, torch.nn


def _images(inputs: dict):
    import torch
    (x,) = inputs.values()
    return (torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).permute(0, 3, 1, 2).contiguous(),)


def _wrap(inner, fn):
    """An nn.Module with `inner`'s children, parameters and buffers as its own (so state_dict
    names stay inner's) whose forward is fn(inner, *args). `inner` is held outside the module
    tree, so copy.deepcopy copies it with the tree it shares (the float32 reference of a cuda
    bench is such a copy), and `.to()` converts inner's own tensors where forward reads them."""
    torch, nn = _nn()

    class Wrapped(nn.Module):
        def __init__(self):
            super().__init__()
            object.__setattr__(self, "inner", inner)  # not a child: no 'inner.' in the names
            for name, child in inner.named_children():
                self.add_module(name, child)
            self._share_tensors()

        def _share_tensors(self):
            for name, param in inner_of(self).named_parameters(recurse=False):
                self._parameters[name] = param
            for name, buf in inner_of(self).named_buffers(recurse=False):
                self._buffers[name] = buf
                if name in inner_of(self)._non_persistent_buffers_set:
                    self._non_persistent_buffers_set.add(name)

        def _apply(self, fn_, *args, **kwargs):
            inner_of(self)._apply(fn_, *args, **kwargs)  # its children are ours
            self._share_tensors()
            return self

        def train(self, mode: bool = True):
            inner_of(self).train(mode)  # inner's own flag; its children are ours already
            return super().train(mode)

        def forward(self, *args):
            out = fn(inner_of(self), *args)
            return out if isinstance(out, tuple) else (out,)

    return Wrapped()


def inner_of(wrapped):
    return wrapped.__dict__["inner"]


# -- builders: () -> (module, to_args, outputs, input_names) --------------------------------------
def _mlp():
    torch, nn = _nn()
    inner = nn.Module()
    inner.fc1, inner.fc2 = nn.Linear(32, 64), nn.Linear(64, 16)
    fn = lambda m, x: torch.softmax(m.fc2(torch.nn.functional.gelu(m.fc1(x))), dim=-1)
    to_args = lambda inputs: (torch.from_numpy(inputs["x"].astype(np.float32)),)
    return _wrap(inner, fn), to_args, ("softmax",), ("x",)


def _tiny_cnn():
    torch, nn = _nn()
    from torchvision.models.resnet import Bottleneck
    inner = nn.Module()
    inner.conv1, inner.bn1 = nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16)
    down = nn.Sequential(nn.Conv2d(16, 32, 1, stride=2, bias=False), nn.BatchNorm2d(32))
    inner.layer1 = nn.Sequential(Bottleneck(16, 8, stride=2, downsample=down))
    inner.dw = nn.Sequential(nn.Conv2d(32, 32, 3, padding=1, groups=32), nn.BatchNorm2d(32), nn.ReLU())
    F = torch.nn.functional

    def fn(m, x):
        x = F.max_pool2d(F.relu(m.bn1(m.conv1(x))), 3, 2, 1)
        x = F.avg_pool2d(m.dw(m.layer1(x)), 3, 2, 1)
        return m.fc(x.mean(dim=(2, 3)))
    inner.fc = nn.Linear(32, 10)
    return _wrap(inner, fn), _images, ("fc",), ("image",)


def _resnet50():
    import torchvision
    return _wrap(torchvision.models.resnet50(), lambda m, x: m(x)), _images, ("fc",), ("image",)


def _vit(image, patch, layers, heads, hidden, mlp, classes):
    def build():
        from torchvision.models.vision_transformer import VisionTransformer
        vit = VisionTransformer(image_size=image, patch_size=patch, num_layers=layers, num_heads=heads,
                                hidden_dim=hidden, mlp_dim=mlp, num_classes=classes)
        return _wrap(vit, lambda m, x: m(x)), _images, ("heads.head",), ("image",)
    return build


def _bert(encoder_only: bool, **config):
    def build():
        torch, _ = _nn()
        from transformers import BertConfig, BertModel
        bert = BertModel(BertConfig(hidden_act="gelu", layer_norm_eps=1e-12, **config))
        if encoder_only:
            return (_wrap(bert, lambda m, h: m.encoder(h).last_hidden_state),
                    lambda i: (torch.from_numpy(i["hidden_states"].astype(np.float32)),),
                    ("last_hidden_state",), ("hidden_states",))
        names = ("input_ids", "token_type_ids", "attention_mask")
        fn = lambda m, ids, types, mask: tuple(m(input_ids=ids, token_type_ids=types,
                                                 attention_mask=mask)[:2])
        return (_wrap(bert, fn), lambda i: tuple(torch.from_numpy(i[n]) for n in names),
                ("last_hidden_state", "pooler_output"), names)
    return build


TWINS = {
    "mlp": _mlp,
    "tiny_cnn": _tiny_cnn,
    "resnet50": _resnet50,
    "tiny_vit": _vit(32, 8, 2, 4, 64, 128, 10),
    "vit_b16": _vit(224, 16, 12, 12, 768, 3072, 1000),
    "tiny_bert": _bert(False, vocab_size=100, hidden_size=64, num_hidden_layers=2,
                       num_attention_heads=4, intermediate_size=128, max_position_embeddings=64,
                       type_vocab_size=2),
    "bert_base": _bert(True),
}


def torch_twin(graph, name: str | None = None) -> Twin:
    """The twin of `graph` (a loaded spec; `name` picks the twin, default the model's name) in
    eval mode, float32, holding the spec's weights."""
    name = name or graph.name
    if name not in TWINS:
        raise AitError(f"no PyTorch twin for model '{name}'; twins exist for "
                       f"{', '.join(sorted(TWINS))} (ait_build/bench/models.py)")
    torch, _ = _nn()
    torch.manual_seed(0)
    module, to_args, outputs, input_names = TWINS[name]()
    load_spec_weights(module, graph)
    return Twin(module.eval(), to_args, outputs, input_names)


def _without_unit_axes(shape) -> tuple:
    return tuple(int(d) for d in shape if d != 1)


def load_spec_weights(module, graph, strict: bool = True) -> None:
    """Copies every spec weight into the module's state_dict entry of that name. A name the
    module lacks is an error when `strict` (a hand-written twin must compute the same function);
    otherwise it is skipped (an imported spec's constants, which the source module computes). A
    shape that differs is an error, except by axes of size 1, which the importer adds or drops
    (a scalar stored as [1]; a conv1d's [O, C, K] stored as the conv's [O, C, 1, K])."""
    torch, _ = _nn()
    state = module.state_dict()
    with torch.no_grad():
        for name in graph.weight_names():
            if name not in state:
                if strict:
                    raise AitError(f"the PyTorch twin of '{graph.name}' has no weight '{name}'")
                continue
            array = np.asarray(graph.weights.get(name))
            value = torch.from_numpy(array.astype(np.float32) if array.dtype.kind == "f" else array)
            if tuple(value.shape) != tuple(state[name].shape):
                if _without_unit_axes(value.shape) != _without_unit_axes(state[name].shape):
                    raise AitError(f"weight '{name}': spec shape {list(value.shape)}, PyTorch "
                                   f"module {list(state[name].shape)}")
                value = value.reshape(state[name].shape)
            state[name].copy_(value)
