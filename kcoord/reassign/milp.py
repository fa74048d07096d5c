"""A small mixed-integer program builder, solved with HiGHS (highspy).

The planner states its programs here once; the bench states the same ones to OR-Tools to
compare (bench/reassign.py). HiGHS runs on one thread with a fixed seed and no time limit, so
one input always gives one answer.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

INF = float("inf")


@dataclass
class Program:
    cost: list[float] = field(default_factory=list)
    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    integer: list[bool] = field(default_factory=list)
    rows: list[tuple[float, float, dict[int, float]]] = field(default_factory=list)

    def var(self, cost: float = 0.0, lower: float = 0.0, upper: float = INF, integer: bool = False) -> int:
        self.cost.append(cost)
        self.lower.append(lower)
        self.upper.append(upper)
        self.integer.append(integer)
        return len(self.cost) - 1

    def binary(self, cost: float = 0.0) -> int:
        return self.var(cost, 0.0, 1.0, True)

    def row(self, terms: dict[int, float], lower: float = -INF, upper: float = INF) -> None:
        """lower <= sum(coef * var) <= upper (terms: var -> coef)."""
        self.rows.append((lower, upper, terms))


def _quiet_highs(highspy):
    """A Highs instance, its start-up banner (written to fd 1 from C++, so out of reach of
    sys.stdout) kept off stdout, where `kcoord reassign plan` prints its JSON."""
    if os.environ.get("KCOORD_MILP_LOG"):
        return highspy.Highs()
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            return highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def solve(program: Program, gap: float = 1e-3, nodes: int = 2000) -> list[float]:
    """The values of the best solution found: optimal within the relative `gap`, or the best
    after `nodes` branch-and-bound nodes (a count, not a time, so the answer is repeatable)."""
    import highspy

    h = _quiet_highs(highspy)
    for name, value in (("output_flag", bool(os.environ.get("KCOORD_MILP_LOG"))), ("threads", 1), ("random_seed", 0),
                        ("mip_rel_gap", gap), ("mip_max_nodes", nodes)):
        h.setOptionValue(name, value)
    lp = highspy.HighsLp()
    n = len(program.cost)
    lp.num_col_ = n
    lp.num_row_ = len(program.rows)
    lp.col_cost_ = program.cost
    lp.col_lower_ = program.lower
    lp.col_upper_ = program.upper
    lp.row_lower_ = [r[0] for r in program.rows]
    lp.row_upper_ = [r[1] for r in program.rows]
    starts, index, value = [0], [], []
    for _, _, terms in program.rows:
        for var, coef in sorted(terms.items()):
            index.append(var)
            value.append(coef)
        starts.append(len(index))
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = n
    lp.a_matrix_.num_row_ = len(program.rows)
    lp.a_matrix_.start_ = starts
    lp.a_matrix_.index_ = index
    lp.a_matrix_.value_ = value
    lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                       for i in program.integer]
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal and h.getInfo().primal_solution_status != 2:
        raise RuntimeError(f"HiGHS: {h.modelStatusToString(status)}")
    return list(h.getSolution().col_value)
