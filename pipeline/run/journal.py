"""The run's journal: what a command that rewrites a run set out to do, recorded before its first
write and marked finished after its last. A command killed part way (SIGKILL, a lost machine) is
finished by running it again, and no other command mistakes the half-rewritten run for a whole one.

`RUN/journal.json` lists the commands that rewrote the run, oldest first; only the last may be
unfinished. An entry names the command (`blocklist apply`), the line that runs it again, its
arguments, when it started and finished, the values it worked out before it wrote what they decide
(`remembered`: the classes a class review vetoes, the images a backfill pass drops) and the steps it
finished (`once`: a stage `build --from` cleared, a pass's download). The same command run again,
with the same arguments (the run itself named as it is now: a run may be moved between the two),
takes the unfinished entry over and reads those values back, so it does
what the killed one set out to do, not what the half-rewritten run now suggests (the vetoes it had
written, say, would tell it that nothing is left to veto). Another command that writes the run is
refused, naming the command to run again (`finishes` lets `build` finish a stage command's entry,
as a build runs every stage); `require_finished` refuses a command that reads the run. An entry is
read strictly: one from a damaged or older file is refused in one line, and a remembered value is
read back through the reader its command gives (`remembered(..., read=)`), which refuses a value
edited by hand.

A test kills a command at a named point of its work (`checkpoint`): `IMAGENOT_KILL_AT=POINT`, where
POINT is `journal` (the lock taken, the intent recorded), `STAGE ran` (a stage's outputs written,
its folder not yet marked done) or `backfill dropped` (a pass's images added to the download
stage's dropped list, the download not yet run again).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import signal
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from imagenot.errors import ImagenotError
from imagenot.pipeline.run.files import RunFileError, read_json, write_json
from imagenot.pipeline.run.filesystems import FileSystems
from imagenot.pipeline.run.layout import JOURNAL_FILE
from imagenot.pipeline.run.lock import run_lock

log = logging.getLogger(__name__)

KILL_AT = "IMAGENOT_KILL_AT"  # fault injection for tests: the named point where the process kills itself
KEPT_ENTRIES = 200  # the journal's length: older entries, all finished, are dropped
RUN_OPTIONS = ("--run", "--out")  # name the run itself: not compared, and shown as the run is named now
# An entry's fields and what each holds (`intent` writes them all).
ENTRY_FIELDS: dict[str, tuple[type, ...]] = {
    "command": (str,),
    "line": (str,),
    "args": (dict,),
    "started": (str,),
    "finished": (str, type(None)),
    "resumed": (bool,),
    "remembered": (dict,),
    "steps": (list,),
}


class UnfinishedRunError(ImagenotError):
    """Another command's rewrite of the run has not finished."""


class Intent:
    """The journal entry of the command at work: what it remembers and the steps it finished."""

    def __init__(self, run_dir: str, entries: list[dict]):
        self.run_dir, self._entries = run_dir, entries

    @property
    def entry(self) -> dict:
        return self._entries[-1]

    @property
    def resumed(self) -> bool:
        """Whether this run of the command finishes one that was interrupted."""
        return bool(self.entry["resumed"])

    def save(self) -> None:
        write_json(journal_path(self.run_dir), self._entries[-KEPT_ENTRIES:])

    def remembered(self, key: str, compute: Callable[[], Any], read: Callable[[Any], Any] | None = None) -> Any:
        """`compute()`'s value (JSON) the first time this intent asks, recorded before it is used;
        the recorded value when a rerun asks again. `read` turns the JSON into the value used, the
        same on either path, and raises ValueError or TypeError for one it cannot use (a hand edit)."""
        memo = self.entry["remembered"]
        if key not in memo:
            memo[key] = compute()
            self.save()
        if read is None:
            return memo[key]
        try:
            return read(memo[key])
        except (ValueError, TypeError) as err:
            raise ImagenotError(
                f"{journal_path(self.run_dir)}: `{self.entry['command']}`'s remembered {key!r} is not what it "
                f"recorded ({err}); restore the file as the command wrote it"
            ) from err

    def once(self, step: str, action: Callable[[], object]) -> None:
        """Run `action` unless this intent finished `step` before it was interrupted."""
        if step not in self.entry["steps"]:
            action()
            self.entry["steps"].append(step)
            self.save()


_CURRENT: ContextVar[Intent | None] = ContextVar("imagenot_intent", default=None)


def journal_path(run_dir: str) -> str:
    return FileSystems.join(run_dir, JOURNAL_FILE)


def read_journal(run_dir: str) -> list[dict]:
    """The run's journal entries, oldest first (none for a run no command rewrote)."""
    path = journal_path(run_dir)
    if not FileSystems.exists(path):
        return []
    try:
        entries = read_json(path)
    except RunFileError as err:
        raise ImagenotError(f"{err}: not imagenot's journal of the run; restore it or delete it") from err
    if not isinstance(entries, list):
        raise ImagenotError(f"{path}: not imagenot's journal of the run (a list of commands); restore it or delete it")
    for number, entry in enumerate(entries, 1):
        if problem := _entry_problem(entry):
            raise ImagenotError(
                f"{path}: entry {number} {problem}: not an entry of imagenot's journal of the run (a damaged or "
                "older file); restore it or delete it"
            )
    return entries


def _entry_problem(entry: object) -> str | None:
    """What is wrong with a journal entry as read, or None."""
    if not isinstance(entry, dict):
        return f"is a {type(entry).__name__}, not a mapping"
    for field, kinds in ENTRY_FIELDS.items():
        if field not in entry:
            return f"has no {field!r}"
        if not isinstance(entry[field], kinds):
            return f"holds {entry[field]!r} as {field!r}"
    if not all(isinstance(step, str) for step in entry["steps"]):
        return f"holds {entry['steps']!r} as 'steps' (names of steps)"
    try:
        shlex.split(entry["line"])
    except ValueError as err:
        return f"holds {entry['line']!r} as 'line' ({err})"
    return None


def unfinished(run_dir: str) -> dict | None:
    """The journal entry of a command that has not finished rewriting the run, or None."""
    return _last_unfinished(read_journal(run_dir))


def _last_unfinished(entries: list[dict]) -> dict | None:
    return entries[-1] if entries and entries[-1].get("finished") is None else None


def shown_line(entry: dict, run_dir: str) -> str:
    """The entry's command line with the run named as `run_dir` names it now (the run may have
    been moved since): the line that finishes it."""
    words = shlex.split(entry["line"])
    for at, word in enumerate(words[:-1]):
        if word in RUN_OPTIONS:
            words[at + 1] = run_dir
    return shlex.join(words)


def _unfinished_message(run_dir: str, entry: dict) -> str:
    return (
        f"{run_dir}: `{shown_line(entry, run_dir)}` has not finished rewriting this run (started "
        f"{entry['started']}): it is running now, or it was interrupted; run it again to finish it"
    )


def _stopped_note(run_dir: str, entry: dict) -> str:
    """What an error that stopped a command part way adds: its entry stays unfinished, and the
    same command, run again once the cause is fixed, finishes it."""
    return (
        f"`{shown_line(entry, run_dir)}` stopped part way through rewriting {run_dir}: once that is fixed, run it "
        "again to finish it (until then other commands refuse the run)"
    )


def require_finished(run_dir: str) -> None:
    """Refuse to read a run that a command left half rewritten."""
    if entry := unfinished(run_dir):
        raise UnfinishedRunError(_unfinished_message(run_dir, entry))


def resuming(run_dir: str, command: str) -> bool:
    """Whether the run's unfinished entry is `command`'s: its rerun may find the stages it was
    rewriting unfinished, and is the one command that must not be refused for that."""
    entry = unfinished(run_dir)
    return entry is not None and entry["command"] == command


def left_to_finish(run_dir: str, command: str, args: Mapping[str, object]) -> dict | None:
    """The run's unfinished entry when it is this very command's (same arguments), which a run of
    it takes over: what it remembered may stand in for an input that has gone since."""
    entry = unfinished(run_dir)
    same = entry is not None and entry["command"] == command
    return entry if same and _compared(entry["args"]) == _compared(json.loads(json.dumps(dict(args)))) else None


def command_line(command: str, args: Mapping[str, object]) -> str:
    """`imagenot COMMAND --option value --flag`, as a user types it again (None and False left out,
    a list's option repeated)."""
    words = ["imagenot", command]
    for option, value in args.items():
        if value is True:
            words.append(option)
        elif value not in (None, False):
            for item in value if isinstance(value, list) else [value]:
                words += [option, shlex.quote(str(item))]
    return " ".join(words)


def _compared(args: dict) -> dict:
    """The arguments two runs of a command must share to be one: all but the run's own name."""
    return {option: value for option, value in args.items() if option not in RUN_OPTIONS}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _may_finish(run_dir: str, left: dict | None, command: str, args: dict, finishes: tuple[str, ...]) -> bool:
    """Whether `left` (the unfinished entry, or None) is this very command's, to take over; raises
    when it is another's that this command does not finish."""
    same = left is not None and left["command"] == command and _compared(left["args"]) == _compared(args)
    if left is not None and not same and left["command"] not in finishes:
        raise UnfinishedRunError(_unfinished_message(run_dir, left))
    return same


def refuse_unfinished(run_dir: str, command: str, args: Mapping[str, object], finishes: tuple[str, ...] = ()) -> None:
    """Refuse now, as `intent` would, a command that may not take over the run's unfinished entry:
    for a command whose own checks would otherwise speak first (a half-rewritten run lacks what
    they look for)."""
    _may_finish(run_dir, unfinished(run_dir), command, json.loads(json.dumps(dict(args))), finishes)


@contextlib.contextmanager
def intent(run_dir: str, command: str, args: Mapping[str, object], finishes: tuple[str, ...] = ()) -> Iterator[Intent]:
    """Record that `command` (with `args`, its options as typed) sets out to rewrite the run, and
    mark it finished when the block completes; an error or a kill leaves it unfinished. Hold the
    run's lock around it (`rewriting` does both). An unfinished entry of the same command and
    arguments is taken over; one of a command in `finishes` (with any arguments) is finished by
    this one; any other refuses the command."""
    args = json.loads(json.dumps(dict(args)))  # as the journal holds them
    entries = read_journal(run_dir)
    left = _last_unfinished(entries)
    line = command_line(command, args)
    if _may_finish(run_dir, left, command, args, finishes):
        log.warning("%s: finishing `%s`, interrupted (started %s)", run_dir, line, left["started"])
        left.update(args=args, line=line, resumed=True)  # the run named as it is now
    else:
        entries.append(
            {
                "command": command,
                "line": line,
                "args": args,
                "started": _now(),
                "finished": None,
                "resumed": False,
                "remembered": {},
                "steps": [],
            }
        )
    recorded = Intent(run_dir, entries)
    recorded.save()  # before the command's first write
    checkpoint("journal")
    token = _CURRENT.set(recorded)
    try:
        yield recorded
    except Exception as err:
        err.add_note(_stopped_note(run_dir, recorded.entry))  # the command line ends its error line with it
        raise
    finally:
        _CURRENT.reset(token)
    recorded.entry["finished"] = _now()  # after its last
    recorded.save()


@contextlib.contextmanager
def rewriting(
    run_dir: str,
    stale_after_s: float,
    break_lock: bool,
    command: str,
    args: Mapping[str, object],
    create_dir: bool = False,
    finishes: tuple[str, ...] = (),
    check: Callable[[], object] | None = None,
) -> Iterator[Intent]:
    """The run's lock, then `check()` (what can refuse the command before it writes: a refused
    command leaves nothing to finish), then the command's intent in its journal (see `intent`)."""
    with run_lock(run_dir, stale_after_s, break_lock, create_dir):
        if check is not None:
            check()
        with intent(run_dir, command, args, finishes) as it:
            yield it


def current() -> Intent | None:
    """The intent of the command at work in this process (None: a library call outside a command)."""
    return _CURRENT.get()


def remembered(key: str, compute: Callable[[], Any], read: Callable[[Any], Any] | None = None) -> Any:
    """`Intent.remembered` of the command at work; outside a command, `compute()` (through `read`)."""
    recorded = current()
    if recorded is not None:
        return recorded.remembered(key, compute, read)
    return compute() if read is None else read(compute())


def count(value: object) -> int:
    """A remembered count, as read back (`remembered`'s `read`)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{value!r} is not a count")
    return value


def text(value: object) -> str:
    """A remembered text, as read back."""
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a text")
    return value


def texts(value: object) -> list[str]:
    """A remembered list of texts, as read back."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{value!r} is not a list of texts")
    return value


def once(step: str, action: Callable[[], object]) -> None:
    """`Intent.once` of the command at work; outside a command, `action()`."""
    recorded = current()
    if recorded is None:
        action()
    else:
        recorded.once(step, action)


def checkpoint(point: str) -> None:
    """Kill this process here (SIGKILL, nothing cleaned up) when `IMAGENOT_KILL_AT` names `point`;
    its process group too when it leads one (Beam's worker processes), as `kill -9 -PGID` would."""
    if os.environ.get(KILL_AT) != point:
        return
    log.warning("%s=%s: killing this process", KILL_AT, point)
    if os.getpgid(0) == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
