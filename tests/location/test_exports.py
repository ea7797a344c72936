import tether.location


def test_public_surface_is_pinned() -> None:
    assert tether.location.__all__ == [
        "BOM",
        "FILE_CHANGED_MESSAGE",
        "PROTECTED_NAMES",
        "ExternalDirectory",
        "Location",
        "PathKind",
        "PermissionAsserter",
        "ResolvedPath",
        "TextFile",
        "adapt_line_endings",
        "authorize",
        "authorize_edit",
        "authorize_protected",
        "check_path_sync",
        "decode_text",
        "encode_text",
        "line_ending",
        "lock_files",
        "names_protected_path",
        "open_for_reading_sync",
        "protected_anchor",
        "read_bytes",
        "read_bytes_sync",
        "remove_if_unchanged_sync",
        "require_external",
        "sanitize_path",
        "write_bytes_sync",
        "write_if_unchanged",
        "write_if_unchanged_sync",
    ]
    for name in tether.location.__all__:
        assert hasattr(tether.location, name)
