"""Permissions: rules, evaluation, the permission service (ask / assert / reply), saved approvals, agents' defaults.

The gate lives at the point of action (law 4): a leaf builds a :class:`PermissionRequest` from its tool context and
calls :meth:`PermissionService.assert_`. Nothing here knows about the registry or the catalog.
"""

from .._wildcard import match as wildcard_match
from ._agents import DEFAULT_AGENT, Agent, AgentMode, builtin_agents
from ._always import always_saves, is_broad
from ._evaluate import Decision, Verdict, evaluate, evaluate_request, explain, names_protected_path
from ._events import AskResult, PendingRequest, PermissionAsked, PermissionDecided, PermissionReplied
from ._outputs import retained_output_rules
from ._resolve import CallerRules, ResolvedRules, RulesResolver, StaticRules
from ._ruleset import Ruleset
from ._saved import ApprovalsConnection, ApprovalsDatabase, SavedApproval, SavedApprovals
from ._service import PermissionService
from ._sessions import SessionRules, SessionView
from ._types import Effect, PermissionRequest, PermissionSource, Reply, Rule

__all__ = [
    "DEFAULT_AGENT",
    "Agent",
    "AgentMode",
    "ApprovalsConnection",
    "ApprovalsDatabase",
    "AskResult",
    "CallerRules",
    "Decision",
    "Effect",
    "PendingRequest",
    "PermissionAsked",
    "PermissionDecided",
    "PermissionReplied",
    "PermissionRequest",
    "PermissionService",
    "PermissionSource",
    "Reply",
    "ResolvedRules",
    "Rule",
    "RulesResolver",
    "Ruleset",
    "SavedApproval",
    "SavedApprovals",
    "SessionRules",
    "SessionView",
    "StaticRules",
    "Verdict",
    "always_saves",
    "builtin_agents",
    "evaluate",
    "evaluate_request",
    "explain",
    "is_broad",
    "names_protected_path",
    "retained_output_rules",
    "wildcard_match",
]
