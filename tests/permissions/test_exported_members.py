import tether.permissions as permissions

EXPECTED = {
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
}


def test_public_surface_is_pinned() -> None:
    assert set(permissions.__all__) == EXPECTED
    for name in permissions.__all__:
        assert getattr(permissions, name) is not None, name
