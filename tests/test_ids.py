import threading

from tether import ids


def test_ascending_ids_sort_in_creation_order() -> None:
    made = [ids.ascending("call") for _ in range(5000)]
    assert made == sorted(made) and len(set(made)) == len(made)
    assert all(i.startswith("call_") for i in made)


def test_descending_ids_sort_newest_first() -> None:
    made = [ids.descending("ses") for _ in range(1000)]
    assert made == sorted(made, reverse=True)


def test_ids_are_unique_across_threads() -> None:
    out: list[str] = []

    def work() -> None:
        out.extend(ids.ascending("prt") for _ in range(2000))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(out)) == len(out)


def test_timestamp_round_trips() -> None:
    import time

    before = int(time.time() * 1000)
    stamp = ids.timestamp_ms(ids.ascending("msg"))
    assert before <= stamp <= int(time.time() * 1000) + 1
