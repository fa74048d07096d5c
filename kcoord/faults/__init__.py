"""Fault injection: rules and the injector every request passes through (`injector`),
and their HTTP routes (`routes`)."""
from kcoord.faults.injector import FaultInjector, FaultRule, FaultRuleError, load_rules_file

__all__ = ["FaultInjector", "FaultRule", "FaultRuleError", "load_rules_file"]
