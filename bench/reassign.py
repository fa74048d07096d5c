"""The reassignment planner on the bench clusters of issue 28, beside a greedy baseline and
Kafka's own `kafka-reassign-partitions --generate`, and its programs solved by HiGHS (what
kcoord uses) and by OR-Tools (SCIP) to choose between them.

    PYTHONPATH=. python bench/reassign.py [--solvers highs,ortools] [--skip-scale] [--skip-kafka]

Clusters (kcoord.reassign.synthetic: Kafka's own placement, Pareto-skewed sizes, seeded):
- expand:   6 brokers over 3 racks, 500 partitions x 3 replicas, brokers 7 and 8 added;
- remove:   8 brokers over 3 racks, 500 partitions x 3 replicas, broker 7 removed;
- balanced: the expand cluster as kcoord's plan leaves it, planned again (nothing should move);
- scale:    36 brokers over 3 racks, 10,000 partitions x 3 replicas, brokers 37-40 added.
"kafka --generate" (bench/kafka_generate.py): the cluster is created on a multi-broker kcoord
(each partition with its own replica list) and Kafka 4.3.1's tool, from the reference Kafka's
jars (`make install-test`), proposes a placement over the target brokers; its plan time is the
tool's wall time, JVM start included; its re-plan is the tool run again on a kcoord holding its
proposal. Without Java or the jars the row says so.
Prints a Markdown table (the one in bench/RESULTS.md).
"""
from __future__ import annotations

import argparse
import platform
import sys
import time
from dataclasses import replace

import kafka_generate
from kcoord.reassign import milp
from kcoord.reassign.model import Cluster, changed
from kcoord.reassign.plan import Options, plan, target_brokers
from kcoord.reassign.score import rack_cap, rack_count, score
from kcoord.reassign.synthetic import generated
from kcoord.testing.reference_kafka import ReferenceKafkaUnavailable


# ------------------------------------------------------------------ a greedy baseline
def greedy(cluster: Cluster, options: Options) -> Cluster:
    """What the simple tools do: move the largest replicas off the brokers with the most
    replicas onto the ones with the fewest (rack caps kept), then make each partition's
    least-leading replica its leader. Counts replicas, not bytes; no failover order."""
    targets = target_brokers(cluster, options)
    racks_n = rack_count(cluster, targets)
    assignment = {p.key: list(p.replicas) for p in cluster.partitions}
    count = {b: 0 for b in targets}
    for rs in assignment.values():
        for b in rs:
            count[b] = count.get(b, 0) + 1
    total = sum(len(rs) for rs in assignment.values())
    ceiling = -(-total // len(targets))

    def fits(key, src, dst) -> bool:
        rs = assignment[key]
        if dst in rs:
            return False
        if not racks_n:
            return True
        rack = cluster.racks[dst]
        same = sum(1 for b in rs if b != src and cluster.racks[b] == rack)
        return same + 1 <= rack_cap(len(rs), racks_n)

    for p in sorted(cluster.partitions, key=lambda p: (-p.size, p.key)):
        for i, src in enumerate(list(assignment[p.key])):
            if src in targets and count[src] <= ceiling:
                continue
            for dst in sorted(targets, key=lambda b: (count[b], b)):
                if (src not in targets or count[dst] < count[src] - 1) and fits(p.key, src, dst):
                    assignment[p.key][i] = dst
                    count[src] -= 1
                    count[dst] += 1
                    break
    led = {b: 0 for b in targets}
    for key in sorted(assignment):
        rs = assignment[key]
        first = min(rs, key=lambda b: (led.get(b, 0), rs.index(b)))
        led[first] = led.get(first, 0) + 1
        assignment[key] = [first] + [b for b in rs if b != first]
    return Cluster(cluster.racks, tuple(replace(p, replicas=tuple(assignment[p.key]), isr=None)
                                        for p in cluster.partitions))


# ------------------------------------------------------------------ OR-Tools, for comparison
ORTOOLS_LIMIT_S = 60.0   # per program; SCIP does not close the placement gap in minutes
LIMITS_HIT: list[float] = []


def solve_ortools(program: milp.Program, gap: float = 1e-3, nodes: int = 2000) -> list[float]:
    from ortools.linear_solver import pywraplp

    solver = pywraplp.Solver.CreateSolver("SCIP")
    solver.SetNumThreads(1)
    xs = [solver.IntVar(lo, hi if hi != milp.INF else solver.infinity(), "") if integer else
          solver.NumVar(lo if lo != -milp.INF else -solver.infinity(), hi if hi != milp.INF else solver.infinity(), "")
          for lo, hi, integer in zip(program.lower, program.upper, program.integer)]
    for lo, hi, terms in program.rows:
        c = solver.RowConstraint(lo if lo != -milp.INF else -solver.infinity(),
                                 hi if hi != milp.INF else solver.infinity(), "")
        for v, coef in terms.items():
            c.SetCoefficient(xs[v], coef)
    objective = solver.Objective()
    for v, cost in enumerate(program.cost):
        objective.SetCoefficient(xs[v], cost)
    objective.SetMinimization()
    params = pywraplp.MPSolverParameters()
    params.SetDoubleParam(params.RELATIVE_MIP_GAP, max(gap, 1e-9))
    solver.SetTimeLimit(int(ORTOOLS_LIMIT_S * 1000))
    status = solver.Solve(params)
    if status not in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
        raise RuntimeError("OR-Tools found no solution")
    if status != pywraplp.Solver.OPTIMAL:
        LIMITS_HIT.append(ORTOOLS_LIMIT_S)
    return [x.solution_value() for x in xs]


def scenarios(skip_scale: bool):
    expand = generated(6, 500, extra_brokers=2, seed=11)
    yield "expand 6->8", expand, Options(add=(7, 8))
    yield "remove 1 of 8", generated(8, 500, seed=12), Options(remove=(7,))
    yield "balanced", plan(expand, Options(add=(7, 8))), Options()
    if not skip_scale:
        yield "scale 36->40, 10k", generated(36, 10_000, extra_brokers=4, seed=13), Options(add=(37, 38, 39, 40))


def measure(name: str, planner, cluster: Cluster, options: Options) -> list:
    start = time.perf_counter()
    after = planner(cluster, options)
    took = time.perf_counter() - start
    return scored_row(name, took, cluster, options, after, planner(after, replan_options(options)))


def replan_options(options: Options) -> Options:
    """The plan of a planned cluster: its brokers are the ones it now uses."""
    return replace(options, add=(), remove=())


def scored_row(name: str, took: float, cluster: Cluster, options: Options, after: Cluster, replanned: Cluster) -> list:
    s = score(cluster, after, target_brokers(cluster, options), replan_moves=len(changed(after, replanned)))
    return [name, f"{took:.2f}", f"{s.bytes_ratio:.3f}", s.rack_violations, s.partitions_moved,
            f"{s.bytes_moved / 1e9:.1f}", s.leader_spread, s.replan_moves, s.broker_down_spread]


KAFKA_ROW = "kafka --generate"


def measure_kafka(cluster: Cluster, options: Options) -> list:
    """Kafka's own --generate on a kcoord holding `cluster` (kafka_generate.py); planned again
    on a fresh kcoord holding its proposal. The time is the first run's tool wall time."""
    try:
        first = kafka_generate.generate(cluster, options)
    except ReferenceKafkaUnavailable as err:
        return [KAFKA_ROW, f"not available: {err}"] + ["-"] * 7
    second = kafka_generate.generate(first.cluster, replan_options(options))
    print(f"(kafka --generate: kcoord set up with the cluster's topics in {first.setup_seconds:.1f} s, "
          f"not counted)", file=sys.stderr, flush=True)
    return scored_row(KAFKA_ROW, first.seconds, cluster, options, first.cluster, second.cluster)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--solvers", default="highs,ortools")
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--skip-kafka", action="store_true", help="leave out Kafka's own --generate (a JVM per run)")
    args = parser.parse_args()
    solvers = {"highs": milp.solve, "ortools": solve_ortools}
    print(f"{time.strftime('%Y-%m-%d')}, {platform.machine()}, Python {platform.python_version()}")
    print("| cluster | planner | plan s | bytes max/min | rack violations | partitions moved | GB moved "
          "| leader spread | moves on re-plan | worst spread, 1 broker down |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    start_of = {}
    for name, cluster, options in scenarios(args.skip_scale):
        start_of[name] = score(cluster, cluster, target_brokers(cluster, options))
        s = start_of[name]
        print(f"| {name} | (as it is) | - | {s.bytes_ratio:.3f} | {s.rack_violations} | 0 | 0.0 | {s.leader_spread} "
              f"| - | {s.broker_down_spread} |")
        print("| " + " | ".join(map(str, [name] + measure("greedy", greedy, cluster, options))) + " |")
        for solver in args.solvers.split(","):
            milp_solve = milp.solve
            try:
                milp.solve = solvers[solver]
                LIMITS_HIT.clear()
                row = measure(f"kcoord ({solver})", plan, cluster, options)
                if LIMITS_HIT:
                    row[1] += f" ({len(LIMITS_HIT)} programs stopped at the {ORTOOLS_LIMIT_S:g} s limit)"
            except ImportError as err:
                row = [f"kcoord ({solver})", f"not installed ({err.name}): pip install ortools"] + ["-"] * 7
            finally:
                milp.solve = milp_solve
            print("| " + " | ".join(map(str, [name] + row)) + " |", flush=True)
        if not args.skip_kafka:
            print("| " + " | ".join(map(str, [name] + measure_kafka(cluster, options))) + " |", flush=True)
    if not args.skip_kafka:
        print(f"\n\"{KAFKA_ROW}\": plan s is the tool's wall time, its JVM start included; moves on re-plan: "
              "its second proposal, for a kcoord holding its first, against the first. Its figures change from run "
              "to run: Kafka's placer starts from a random broker.")


if __name__ == "__main__":
    main()
