"""einsum (torch.einsum, ONNX Einsum) written with the ops we have: each pair of operands is one
batched matmul. A pair's letters are sorted into batch (in both and in the result), left and
right (in one and in the result) and contracted (in both, not in the result); each operand is
permuted (free: a layout, not a node, unless the reshape after it needs one) and reshaped to
[batch..., M, K] and [batch..., K, N], and the product is reshaped and permuted to the result's
letters. A letter in one operand only and not in the result is summed first. More operands
contract left to right. Repeated letters in one operand (traces, diagonals) are refused.
"""

from __future__ import annotations

from ait_build.errors import AitError
from ait_build.ir.dims import Dim


def parse(equation: str, ranks: list) -> tuple:
    """([letters of each operand], letters of the result), '...' spelled out as capitals."""
    text = equation.replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(ranks):
        raise AitError(f"einsum '{equation}' names {len(inputs)} operands, got {len(ranks)}")
    spread = max((rank - len(term.replace("...", "")) for term, rank in zip(inputs, ranks)
                  if "..." in term), default=0)
    ellipsis = "".join(chr(ord("A") + i) for i in range(spread))
    out = []
    for term, rank in zip(inputs, ranks):
        if "..." in term:
            own = rank - len(term.replace("...", ""))
            term = term.replace("...", ellipsis[spread - own:])
        if len(term) != rank:
            raise AitError(f"einsum '{equation}': '{term}' for an operand of rank {rank}")
        out.append(term)
    if arrow:
        result = rhs.replace("...", ellipsis)
    else:  # implicit: the broadcast letters, then the letters seen once, in order
        letters = "".join(out)
        result = ellipsis + "".join(sorted(c for c in set(letters)
                                           if letters.count(c) == 1 and c not in ellipsis))
    for term in out + [result]:
        if len(set(term)) != len(term):
            raise AitError(f"einsum '{equation}': a repeated letter in '{term}' (traces and "
                           "diagonals are not supported)")
    return out, result


def einsum(lower, equation: str, operands: list):
    terms, result = parse(equation, [v.rank for v in operands])
    value, letters = operands[0], terms[0]
    later = "".join(terms[1:]) + result
    value, letters = _sum_out(lower, value, letters, later)
    for i in range(1, len(operands)):
        keep = "".join(terms[i + 1:]) + result
        other, other_letters = _sum_out(lower, operands[i], terms[i], letters + keep)
        value, letters = _pair(lower, value, letters, other, other_letters, keep)
    value, letters = _sum_out(lower, value, letters, result)
    return lower.permute(value, [letters.index(c) for c in result]) if letters != result \
        else value


def _sum_out(lower, value, letters: str, needed: str) -> tuple:
    """Sums the axes whose letters nothing later reads."""
    gone = [i for i, c in enumerate(letters) if c not in needed]
    if not gone:
        return value, letters
    if len(gone) == len(letters):
        raise AitError("einsum to a scalar is not supported")
    return lower.sum(value, gone, False), "".join(c for c in letters if c in needed)


def _pair(lower, a, la: str, b, lb: str, keep: str) -> tuple:
    batch = [c for c in la if c in lb and c in keep]
    contract = [c for c in la if c in lb and c not in keep]
    left = [c for c in la if c not in lb]
    right = [c for c in lb if c not in la]
    sa, sb = dict(zip(la, a.source_shape)), dict(zip(lb, b.source_shape))
    a = lower.permute(a, [la.index(c) for c in batch + left + contract])
    b = lower.permute(b, [lb.index(c) for c in batch + right + contract])
    a = lower.reshape(a, tuple(sa[c] for c in batch) + (_prod(sa, left), _prod(sa, contract)))
    b = lower.reshape(b, tuple(sb[c] for c in batch) + (_prod(sb, right), _prod(sb, contract)))
    product = lower.matmul(a, lower.transpose(b, -1, -2))  # [batch, M, N]
    shape = [_broadcast(sa[c], sb[c]) for c in batch] + [sa[c] for c in left] + \
        [sb[c] for c in right]
    return lower.reshape(product, tuple(shape)), "".join(batch + left + right)


def _prod(sizes: dict, letters: list) -> Dim:
    out = Dim.of(1)
    for c in letters:
        out = out * sizes[c]
    return out


def _broadcast(a: Dim, b: Dim) -> Dim:
    return b if a == 1 else a
