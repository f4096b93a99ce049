"""Which stored branch holds each part of a branch's history.

A branch's history is its ancestors' events up to each cut, then its own.
A `Lineage` lists those parts from the root down; a read of `(gt, lte]`
becomes one store read per part it touches.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from acp_agent.core._ids import NO_SEQ, BranchId, Seq
from acp_agent.values import Value

__all__ = ("Lineage", "LineagePart")


@attrs.frozen
class LineagePart(Value):
    """Events `gt < seq <= lte` of one stored branch (`lte` None: no upper end)."""

    branch_id: BranchId
    gt: Seq
    lte: Seq | None


@attrs.frozen
class Lineage(Value):
    """A branch's history as parts of stored branches, root first, itself last."""

    parts: tuple[LineagePart, ...]

    @classmethod
    def root(cls, branch_id: BranchId) -> Lineage:
        """The lineage of a branch with no parent: all its history is its own."""
        return cls((LineagePart(branch_id, NO_SEQ, None),))

    def child(self, branch_id: BranchId, cut_seq: Seq) -> Lineage:
        """The lineage of a child cut from this branch after `cut_seq`."""
        # A cut below a part's start inherits nothing from that part (a cut inside
        # the parent's own inherited history skips the parent entirely).
        inherited = tuple(
            attrs.evolve(p, lte=cut_seq if p.lte is None else Seq(min(p.lte, cut_seq)))
            for p in self.parts
            if p.gt < cut_seq
        )
        return Lineage((*inherited, LineagePart(branch_id, cut_seq, None)))

    @property
    def branch_id(self) -> BranchId:
        """The branch whose history this is."""
        return self.parts[-1].branch_id

    @property
    def cut_seq(self) -> Seq:
        """Where the branch's own events begin (after this seq)."""
        return self.parts[-1].gt

    def key(self) -> tuple[tuple[str, int], ...]:
        """(branch id, start) per part: equal keys mean the same inherited history."""
        return tuple((p.branch_id, p.gt) for p in self.parts)

    def split(self, gt: Seq, lte: Seq) -> Iterator[LineagePart]:
        """The parts of `(gt, lte]`, each clipped to the range, in order."""
        for part in self.parts:
            low = max(gt, part.gt)
            high = lte if part.lte is None else min(lte, part.lte)
            if low < high:
                yield LineagePart(part.branch_id, Seq(low), Seq(high))
