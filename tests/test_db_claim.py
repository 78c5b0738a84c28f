"""A scan never deletes a database file that another scan is using (db/claim.py)."""

from __future__ import annotations

import multiprocessing
from multiprocessing.synchronize import Event
from pathlib import Path

from apiprof.db.claim import claim, remove_if_unclaimed


def test_a_new_file_is_created_and_removed_when_nobody_else_holds_it(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    with claim(path) as held:
        assert held.created and path.exists()
        (tmp_path / "new.sqlite-wal").write_bytes(b"")
        assert remove_if_unclaimed(held)
    assert not path.exists() and not (tmp_path / "new.sqlite-wal").exists()


def test_an_existing_file_is_not_reported_as_created(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    path.write_bytes(b"")
    with claim(path) as held:
        assert not held.created


def test_the_file_stays_while_a_second_claim_holds_it(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    with claim(path) as first, claim(path) as second:
        assert first.created and not second.created
        assert not remove_if_unclaimed(first)
        assert path.exists()
    assert path.exists()


def _claim_from_another_process(path: str, ready: Event, release: Event) -> None:
    with claim(path):
        ready.set()
        release.wait(60)


def test_a_claim_held_by_another_process_keeps_the_file(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    context = multiprocessing.get_context("spawn")
    ready, release = context.Event(), context.Event()
    with claim(path) as mine:
        other = context.Process(
            target=_claim_from_another_process, args=(str(path), ready, release)
        )
        other.start()
        try:
            assert ready.wait(60)
            assert not remove_if_unclaimed(mine)
        finally:
            release.set()
            other.join(60)
    assert path.exists()


def test_a_path_in_a_missing_folder_gives_an_empty_claim(tmp_path: Path) -> None:
    with claim(tmp_path / "no" / "such.sqlite") as held:
        assert held.fd == -1 and not held.created
        assert not remove_if_unclaimed(held)


def test_a_claim_taken_on_a_file_deleted_meanwhile_follows_the_path(tmp_path: Path) -> None:
    path = tmp_path / "gone.sqlite"
    with claim(path) as first:
        assert remove_if_unclaimed(first)
    with claim(path) as again:
        assert again.created and path.exists()
