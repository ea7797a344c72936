import inspect

from tether import errors


def test_every_error_derives_from_the_root_and_is_drawn_in_the_tree() -> None:
    doc = errors.__doc__ or ""
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, errors.TetherError)
        assert name in doc, f"{name} is missing from the tree in the module docstring"


def test_all_is_sorted_and_complete() -> None:
    defined = {n for n, v in vars(errors).items() if inspect.isclass(v) and issubclass(v, Exception)}
    assert set(errors.__all__) == defined


def test_config_error_names_file_line_and_key() -> None:
    err = errors.ConfigError(
        "unknown effect 'maybe'", file="/p/.tether/tether.json", key="permission.bash", line=3
    )
    assert str(err) == "/p/.tether/tether.json:3 at permission.bash: unknown effect 'maybe'"


def test_retryable_provider_errors() -> None:
    assert errors.ProviderRateLimitError("slow down", retry_after=2.0).retryable
    assert errors.ProviderServerError("oops").retryable
    assert not errors.ProviderAuthError("bad key").retryable


def test_a_passed_deadline_is_a_retryable_connection_error_naming_the_deadline() -> None:
    err = errors.ProviderTimeoutError("no stream event for 2 s", deadline="idle", seconds=2.0)
    assert isinstance(err, errors.ProviderConnectionError) and err.retryable
    assert (err.deadline, err.seconds) == ("idle", 2.0)
    assert not errors.ProviderMalformedError("not JSON").retryable
