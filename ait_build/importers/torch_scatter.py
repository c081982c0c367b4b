"""ATen writes by position: scatter, scatter_add, scatter_reduce, index_put (x[mask] = v,
x[index] = v, +=), index_add, index_copy, index_fill, built from our ops (scatter.py); and
ops that pick rows by position: embedding_bag over bags of one size (lookups reduced per bag),
transformers' grouped matmul of a mixture of experts. The table joins torch_ops.HANDLERS."""

from __future__ import annotations

from ait_build.errors import AitError
from ait_build.importers import scatter
from ait_build.importers.graph import registrar
from ait_build.importers.torch_args import arg
from ait_build.importers.torch_args import key as _key
from ait_build.ir.dims import Dim

HANDLERS: dict = {}
handles = registrar(HANDLERS)


def _operand(t, value):
    return t.tensor(value) if hasattr(value, "meta") else value


@handles("aten.scatter.src", "aten.scatter.value", "aten.scatter.reduce",
         "aten.scatter.value_reduce", "aten.scatter_add.default", "aten.scatter_reduce.two")
def _scatter(t, node):
    key = _key(node)
    x, dim, index = t.tensor(node.args[0]), node.args[1], t.tensor(node.args[2])
    src = _operand(t, node.args[3])
    if key == "aten.scatter_add.default":
        reduce, include_self = "sum", True
    elif key == "aten.scatter_reduce.two":
        reduce, include_self = node.args[4], bool(node.kwargs.get("include_self", True))
    else:
        reduce, include_self = arg(node, 4, "reduce"), True
    if reduce not in scatter.REDUCTIONS:
        raise AitError(f"{key} with reduce='{reduce}'")
    return scatter.scatter_elements(t.lower, x, dim, index, src, reduce, include_self,
                                    f"torch.{key.split('.')[1]}")


@handles("aten.index_put.default")
def _index_put(t, node):
    """x[mask] = v (a mask over x's leading axes, v one value) and x[..., index, ...] = v
    (one 1-d integer index, the other axes whole); with accumulate, +=."""
    x, indices = t.tensor(node.args[0]), node.args[1]
    values, accumulate = t.tensor(node.args[2]), bool(arg(node, 3, "accumulate", False))
    given = [(axis, t.tensor(i)) for axis, i in enumerate(indices) if i is not None]
    if len(given) != 1:
        raise AitError("index_put with several index tensors (one is taken)")
    ((axis, index),) = given
    if index.dtype == "bool":
        whole = t.masked.get(node.args[2]) is indices[axis]
        return _put_masked(t, x, axis, index, values, accumulate, whole)
    if index.rank != 1:
        raise AitError(f"index_put with a {index.rank}-d index (a 1-d one is taken)")
    return scatter.put_along(t.lower, x, axis, index, values, accumulate)


# ops a masked read may pass through on its way to the masked write: elementwise, so the
# selected elements can be computed over the whole tensor and picked by the write
ELEMENTWISE = ("aten.add.", "aten.sub.", "aten.mul.", "aten.div.", "aten.neg.", "aten.abs.",
               "aten.clamp.", "aten.clamp_min.", "aten.clamp_max.", "aten.relu.",
               "aten.sigmoid.", "aten.tanh.", "aten.exp.", "aten.log.", "aten.sqrt.",
               "aten.rsqrt.", "aten.pow.Tensor_Scalar", "aten._to_copy.", "aten.clone.",
               "aten.maximum.", "aten.minimum.", "aten.where.self")


def masked_rows(t, read, mask) -> bool:
    """Whether x[mask] (`read`, mask over x's leading axes) reaches only masked writes
    y[mask] = ... with the same mask, through elementwise ops whose other tensor operands are
    single values or reads with that mask. Then the read is x kept whole (the writes pick the
    selected elements), recorded in t.masked."""
    chain, todo = {read}, [read]
    while todo:
        node = todo.pop()
        for user in node.users:
            key = str(user.target)
            if key == "aten.sym_size.int":  # torch.export's checks of the selected count
                continue
            if key == "aten.index_put.default" and user.args[1] == [mask] and \
                    user.args[0] is not node and user.args[2] is node:
                continue
            if not key.startswith(ELEMENTWISE) or user in chain:
                return False
            for other in user.args:
                if hasattr(other, "meta") and other not in chain and \
                        _elements(other) != 1 and t.masked.get(other) is not mask and \
                        not (str(other.target) == "aten.index.Tensor" and other.args[1] == [mask]):
                    return False  # (another read with the mask: checked when it is reached)
            chain.add(user)
            todo.append(user)
    for node in chain:
        t.masked[node] = mask
    return True


def _elements(node) -> int:
    shape = getattr(node.meta.get("val"), "shape", None)
    if shape is None:
        return 1
    count = 1
    for d in shape:
        count *= d if isinstance(d, int) else 2  # a symbolic size: more than one
    return count


def _put_masked(t, x, axis: int, mask, values, accumulate: bool, whole: bool = False):
    """where(mask, v, x): v one value (or broadcast against x), or, `whole`, values computed
    over the whole tensor from reads with the same mask (masked_rows); not one value per
    selected element from elsewhere, whose count only the run knows."""
    size = values.source_shape
    if not whole and values.rank and any(not d.is_static or d.value != 1 for d in size):
        raise AitError("x[mask] = values with one value per selected element (their count is "
                       "known only at run time; one value, or torch.where, is taken)")
    lead = (Dim.of(1),) * axis
    spread = t.lower.reshape(mask, lead + tuple(mask.source_shape) +
                             (Dim.of(1),) * (x.rank - axis - mask.rank))
    one = values if whole else t.lower.reshape(values, (Dim.of(1),) * x.rank)
    new = t.lower.binary("add", x, one) if accumulate else t.lower.cast(one, x.dtype)
    return t.lower.where_(spread, new, x)


@handles("aten.index_add.default", "aten.index_copy.default", "aten.index_fill.int_Scalar",
         "aten.index_fill.int_Tensor")
def _index_along(t, node):
    key = _key(node)
    x, dim, index = t.tensor(node.args[0]), node.args[1], t.tensor(node.args[2])
    values = _operand(t, node.args[3])
    if key.startswith("aten.index_add"):
        alpha = node.kwargs.get("alpha", 1)
        if alpha != 1:
            values = t.lower.binary("mul", values, alpha)
    return scatter.put_along(t.lower, x, dim, index, values, key.startswith("aten.index_add"),
                             f"torch.{key.split('.')[1]}")


@handles("aten._embedding_bag.default", "aten._embedding_bag_forward_only.default",
         "aten.embedding_bag.default", "aten.embedding_bag.padding_idx")
def _embedding_bag(t, node):
    """nn.EmbeddingBag over a 2-d input (bags of one size s: the offsets an arange of step s,
    which F.embedding_bag writes): the rows looked up as [bags, s, D] and summed, averaged or
    maxed over s; per-sample weights scale the rows (sum); rows at padding_idx count as absent."""
    args = list(node.args) + [None] * (9 - len(node.args))
    weight_arg, ids, offsets, mode, per_sample, last_offset, padding = (
        args[0], t.tensor(args[1]), args[2], args[4] or 0, args[6], args[7], args[8])
    step = _bag_size(offsets)
    if step is None or last_offset:
        raise AitError("embedding_bag with offsets given at run time (bags of varying sizes; "
                       "a 2-d input, bags of one size, is taken)")
    weight = t.weight_name(weight_arg)
    rows = t.lower.gather(t.tensor(weight_arg), ids, 0) if weight is None else \
        t.lower.embedding(ids, weight, t.weight_node_name(weight))
    bags, width = t.dim(node.meta["val"][0].shape[0]), rows.source_shape[-1]
    shape = (bags, Dim.of(step), Dim.of(1))
    rows = t.lower.reshape(rows, (bags, Dim.of(step), width))
    if per_sample is not None:
        rows = t.lower.binary("mul", rows, t.lower.reshape(t.tensor(per_sample), shape))
    if padding is not None and padding >= 0:
        if mode == 2:
            raise AitError("embedding_bag by max with a padding_idx")
        present = t.lower.cast(t.lower.reshape(t.lower.binary("not_equal", ids, int(padding)),
                                               shape), rows.dtype)
        rows = t.lower.binary("mul", rows, present)
        if mode == 1:  # the mean over the rows present; an empty bag gives zeros
            count = t.lower.binary("maximum", t.lower.sum(present, [1], False), 1.0)
            return [t.lower.binary("div", t.lower.sum(rows, [1], False), count), None, None, None]
    reduce = (t.lower.sum, t.lower.mean, t.lower.max)[mode]
    return [reduce(rows, [1], False), None, None, None]


def _bag_size(offsets):
    """s where the offsets are the FX node arange(0, end, s), else None."""
    target = str(getattr(offsets, "target", ""))
    if target not in ("aten.arange.start_step", "aten.arange.default", "aten.arange.start"):
        return None
    start = 0 if target == "aten.arange.default" else offsets.args[0]
    step = offsets.args[2] if target == "aten.arange.start_step" else 1
    return step if start == 0 and isinstance(step, int) else None


@handles("transformers.grouped_mm_fallback.default")
def _grouped_mm(t, node):
    """transformers' grouped matmul of a mixture of experts (integrations/moe.py): rows
    sorted by expert, rows offs[e-1]:offs[e] times weight[e] ([E, in, out]), rows past the
    last offset zero: our grouped_matmul, each row multiplied by its own expert's weight."""
    x, weight, offs = (t.tensor(a) for a in node.args[:3])
    return t.lower.grouped_matmul(x, t.lower.cast(weight, x.dtype), offs)
