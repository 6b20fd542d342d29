"""Shared memory between the ranks of one host: the gloo backend's transport inside a machine.

:class:`SharedMemoryGlooGroup` is what the gloo backend builds by default (:mod:`.gloo` picks
the transport). It keeps the TCP mesh
of :class:`~minidp.core.distributed.backends.tcp.GlooProcessGroup` (send/recv, and everything between
hosts) and moves the collectives between ranks of one host through one shared segment per group.

The segment
-----------
One file in ``/dev/shm`` per host and group: the host's lowest rank creates it, every local rank
opens it, and as soon as all have opened it (agreed through the store) it is unlinked. From then
on it lives only as long as some rank maps it, so nothing remains in ``/dev/shm`` whether the
ranks exit normally, raise or are killed; a rank that fails or times out while the group is
being created unlinks the file too. (``multiprocessing.shared_memory`` is not used: its
resource tracker unlinks segments behind the ranks' backs and warns about "leaks".)

The file grows by appending page-aligned ranges, each mapped on its own: a control range (one
64-byte line of 32-bit words per rank), two banks of fingerprint lines and two of small
all-reduce contributions, the staging slots (one per rank, replaced by a larger
range when a collective needs more; sizes at least double, so the outgrown ranges, which stay
in the file, together take less than the current one) and the arenas that
:meth:`SharedMemoryGlooGroup.allocate` hands out. Every rank issues the same collectives and
allocations in the same order, so every rank computes the same layout without exchanging a
byte: this determinism is the collective agreement behind a growth. Ranges are extended with
``posix_fallocate``, which never shrinks the file, so a rank that is ahead cannot be undone by
one behind it.

Ordering
--------
Each rank owns three counters in its control line -- ``written`` (chunks of its contribution
copied in), ``reduced`` (chunks of its share reduced) and ``finished`` (operations done) -- and
only it writes them. They only grow, identically on every rank, so "rank j has done step s" is
``counter_j >= base + s`` with no resets and no per-operation handshakes. A rank writes its data,
then bumps its counter; x86's store order makes the data visible first (readers check the
counter, then read), so on other architectures the backend keeps to TCP. Each operation starts
by waiting until every rank has finished the previous one, so a slot is never overwritten while
a peer still reads it.

Each collective's fingerprint (see ``backends/base.py``) travels through the segment too: a
rank writes it into its own 64-byte line (of two banks, used in turn), bumps ``announced`` and
reads the peers' lines once their ``announced`` counters catch up, so the check costs no
network round trip. A small all-reduce writes its data before it announces, so the ranks meet
once for both (see ``all_reduce`` below).

Waiting
-------
A rank waiting for a counter spins for ``SPIN_SECONDS`` (a peer that is already in the
collective answers within microseconds), yielding the core between checks: ``sched_yield``
returns at once on an idle core, but on a busy machine it lets a peer (or the rank's own compute
thread: the call releases the GIL) that waits for this core run, which made the median all-reduce
1.5x to 3x as fast under load. Then it sleeps in ``futex(FUTEX_WAIT)`` on the counter
itself -- through ctypes, so the GIL is released and the core is left to the peer. Before it
sleeps it writes whom it sleeps on into its ``sleeping_on`` word; a rank that bumps a counter
calls ``FUTEX_WAKE`` only when a peer sleeps on it (a wake costs a 1.7 us system call, two per
small all-reduce otherwise). Sleeps last at most ``SLEEP_SLICE_SECONDS``: the kernel fences
the sleeper's flag before it compares the counter, but the waker's counter store and flag load
may pass each other, so in that rare case a wake can be missed and the slice bounds the cost.
Between sleeps it checks the group timeout, the peer's state word (set when an operation fails
on that rank or it shuts the group down) and the peer's pidfd (readable once the process is
gone), so a dead peer is named within a sleep slice. A peer that merely finished first is never
mistaken for a lost one: a counter that has reached its target is accepted before any of these
checks.

Algorithms (bit-identical with the TCP ring, which they replace)
----------------------------------------------------------------
- ``all_reduce`` up to ``SMALL_ALL_REDUCE_BYTES``: every rank copies its array into its part of
  a bank, announces its fingerprint and, once every peer announced the same, reduces all parts in
  rank order, as the TCP small path does. Two banks are used in turn, like the fingerprint lines
  (a rank announces only after finishing its previous operation, reads included), so a rank
  never overwrites a part a peer still reads. (Within a host of a larger group the fingerprints
  go over TCP, and the array goes through the slot after the wait for the previous operation.)
- Larger ``all_reduce``: the array is cut into the ring's blocks, one per rank, and each block into
  rows of ``CHUNK_BYTES``. Per row, every rank copies in the chunks of the other ranks' blocks,
  reduces its own block's chunk (its own contribution read in place, the others' from their
  slots, in the order the TCP ring folds it) into its slot, then copies every block's reduced
  chunk out. Rows are pipelined (copy row k + 1, reduce row k, copy out row k - 1), so copying and
  reducing overlap between ranks. A slot holds only ``RING_ROWS`` rows of each block, used in
  turn, so the bytes on their way through it stay in the cache instead of streaming a second copy
  of the array through memory (twice as fast for a 16 MiB array); a rank overwrites a row once
  every peer has copied it out. An operand from :meth:`allocate` is read where it lies: no
  copy-in, and its own block is reduced in place.
- ``broadcast``: the source streams chunks into its slot, the others copy each out as it lands.
- ``all_gather`` / ``reduce_scatter``: copy in, wait for all, copy out / reduce one block.
- ``barrier``: a bump of ``written`` and a wait for everyone's.

Across hosts (hosts found by :mod:`~minidp.core.distributed.backends.host`): ``all_reduce`` reduces
within each host over shared memory, all-reduces between the hosts' lowest ranks over a TCP group
of their own, and broadcasts back within each host; the other collectives use the TCP mesh.
"""

from __future__ import annotations

import ctypes
import math
import mmap
import os
import platform
import re
import secrets
import select
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy

from ..failure_record import PeerFailedError
from .base import Collective, ReduceOp, divide_by_size
from .host import discover_hosts
from .tcp import _REDUCERS, SMALL_ALL_REDUCE_BYTES, GlooProcessGroup, RecvPiece, SendPiece, _split_points

CHUNK_BYTES = 512 << 10
RING_ROWS = 4  # rows of each block in a slot, large all_reduce (>= 4: see _large_all_reduce)
INITIAL_SLOT_BYTES = 1 << 20
SPIN_SECONDS = 50e-6
SLEEP_SLICE_SECONDS = 0.002
_MAX_SMALL_PLANS = 256  # small all-reduce views kept (by dtype, size and slot or bank)

_PAGE = mmap.PAGESIZE
_LINE_WORDS = 16  # one 64-byte cache line of 32-bit words per rank
WRITTEN, REDUCED, FINISHED, STATE, SOURCE, SOURCE_OFFSET, SLEEPING_ON, ANNOUNCED = range(8)
ACTIVE, FAILED, CLOSED = range(3)  # values of a rank's STATE word
_MASK = 0xFFFFFFFF
_FINGERPRINT_LINE = 64  # one encoded Fingerprint per rank (Fingerprint.SIZE bytes)
# Publishing data by a plain counter store after plain data stores relies on x86's total store
# order; elsewhere the gloo backend keeps to TCP.
SUPPORTED = platform.machine() == "x86_64"


def _reached(value: int, target: int) -> bool:
    """``value >= target`` for 32-bit counters that may wrap around."""
    return ((value - target) & _MASK) < 0x80000000


def _round_up(nbytes: int, multiple: int) -> int:
    return -(-nbytes // multiple) * multiple


class _Futex:
    """``futex`` wait and wake on a 32-bit word of a shared mapping, through ctypes (x86-64).

    ctypes releases the GIL for the call, so a sleeping rank leaves the interpreter to its other
    threads and the core to its peers.
    """

    _SYSCALL = 202  # SYS_futex on x86-64
    _WAIT, _WAKE = 0, 1  # shared between processes: not the _PRIVATE variants

    class _Timespec(ctypes.Structure):
        _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]

    def __init__(self) -> None:
        self._syscall = ctypes.CDLL(None, use_errno=True).syscall

    def wait(self, address: int, expected: int, seconds: float) -> None:
        """Sleep while the word at ``address`` holds ``expected``, at most ``seconds``."""
        timeout = self._Timespec(int(seconds), int((seconds % 1) * 1e9))
        self._syscall(
            ctypes.c_long(self._SYSCALL),
            ctypes.c_void_p(address),
            ctypes.c_long(self._WAIT),
            ctypes.c_long(expected),
            ctypes.byref(timeout),
            None,
            ctypes.c_long(0),
        )

    def wake(self, address: int) -> None:
        """Wake every process sleeping on the word at ``address``."""
        self._syscall(
            ctypes.c_long(self._SYSCALL),
            ctypes.c_void_p(address),
            ctypes.c_long(self._WAKE),
            ctypes.c_long(0x7FFFFFFF),
            None,
            None,
            ctypes.c_long(0),
        )


_FUTEX = _Futex()


class SharedSegment:
    """An unlinked shared file that the ranks of one host map, grown range by range."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self.length = 0

    @classmethod
    def establish(
        cls, store: Any, key: str, local_rank: int, local_size: int, label: str, timeout: float
    ) -> "SharedSegment":
        """Create (local rank 0) or open the host's file, then unlink it once all opened it."""
        if local_rank == 0:
            safe = re.sub(r"[^A-Za-z0-9_.-]", "_", label)[:40]
            path = f"/dev/shm/minidp-{safe}-{secrets.token_hex(6)}"
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            store.set(f"{key}/path", path)
        else:
            path = store.get(f"{key}/path", timeout=timeout).decode()
            fd = os.open(path, os.O_RDWR)
        try:
            store.set(f"{key}/opened/{local_rank}", b"1")
            store.wait([f"{key}/opened/{peer}" for peer in range(local_size)], timeout=timeout)
        except BaseException:
            os.close(fd)
            raise
        finally:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        return cls(fd)

    def map_range(self, nbytes: int) -> mmap.mmap:
        """Append ``nbytes`` (rounded up to pages) to the file and map them."""
        nbytes = _round_up(max(nbytes, 1), _PAGE)
        offset, self.length = self.length, self.length + nbytes
        os.posix_fallocate(self._fd, offset, nbytes)
        return mmap.mmap(self._fd, nbytes, offset=offset)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _address(buffer: numpy.ndarray) -> int:
    return buffer.__array_interface__["data"][0]


class SharedMemoryTransport:
    """The collectives between the ranks of one host, over one :class:`SharedSegment`.

    ``local_ranks`` are the group ranks on this host (at least two, ascending) and ``pids`` their
    processes; ``group`` names ranks in errors and gives the timeout. Arrays are flat and
    C-contiguous.
    """

    def __init__(
        self, group: GlooProcessGroup, segment: SharedSegment, local_ranks: Sequence[int], pids: Sequence[int]
    ) -> None:
        self._group = group
        self._segment = segment
        self._ranks = list(local_ranks)
        self.size = len(self._ranks)
        self.rank = self._ranks.index(group.rank)
        control = numpy.frombuffer(segment.map_range(64 * self.size), numpy.uint8)
        # Two banks of one fingerprint line per rank, used in turn; two banks of small-all-reduce
        # contributions, announced with the fingerprints (see announced_all_reduce).
        self._fingerprints = memoryview(segment.map_range(2 * _FINGERPRINT_LINE * self.size))
        bank_bytes = SMALL_ALL_REDUCE_BYTES * self.size
        banks = numpy.frombuffer(segment.map_range(2 * bank_bytes), numpy.uint8)
        self._banks = [banks[:bank_bytes], banks[bank_bytes : 2 * bank_bytes]]
        self._announced = 0
        self._control = control
        self._words = memoryview(control).cast("I")
        self._control_address = _address(control)
        self._pidfds = [os.pidfd_open(pid) if peer != self.rank else -1 for peer, pid in enumerate(pids)]
        self._peers = [peer for peer in range(self.size) if peer != self.rank]
        # The peers' SLEEPING_ON words, and the value in them that means "asleep on this rank".
        self._sleeping_words = [peer * _LINE_WORDS + SLEEPING_ON for peer in self._peers]
        self._sleeping_mark = self.rank + 1
        self._counts = [0, 0, 0]  # WRITTEN, REDUCED, FINISHED as every rank will have them
        self._slots = numpy.empty(0, numpy.uint8)
        self._slot_bytes = 0
        self._small_plans: Dict[Tuple[numpy.dtype, int, Optional[int]], Tuple[numpy.ndarray, numpy.ndarray]] = {}
        self._arenas: List[Tuple[numpy.ndarray, int]] = []
        self._scratch = numpy.empty(CHUNK_BYTES, numpy.uint8)
        self._grow_slots(INITIAL_SLOT_BYTES)

    # --- layout -----------------------------------------------------------------------------
    def _grow_slots(self, nbytes: int) -> None:
        self._slot_bytes = _round_up(nbytes, _PAGE)
        self._slots = numpy.frombuffer(self._segment.map_range(self._slot_bytes * self.size), numpy.uint8)
        self._small_plans.clear()

    def _reserve(self, nbytes: int) -> None:
        """Make every slot hold ``nbytes``: every rank grows at the same operation."""
        if nbytes > self._slot_bytes:
            self._grow_slots(max(nbytes, 2 * self._slot_bytes))

    def _slot(self, peer: int, nbytes: int) -> numpy.ndarray:
        start = peer * self._slot_bytes
        return self._slots[start : start + nbytes]

    def allocate(self, shape: Sequence[int], dtype: Any) -> numpy.ndarray:
        """A zeroed array in a new arena of the segment (every local rank gets its own part)."""
        dtype = numpy.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        stride = _round_up(max(nbytes, 1), _PAGE)
        arena = numpy.frombuffer(self._segment.map_range(stride * self.size), numpy.uint8)
        self._arenas.append((arena, stride))
        start = self.rank * stride
        return arena[start : start + nbytes].view(dtype).reshape(shape)

    def _arena_place(self, flat: numpy.ndarray) -> Tuple[int, int]:
        """(arena number + 1, byte offset in this rank's part) of ``flat``, or (0, 0)."""
        address = _address(flat)
        for number, (arena, stride) in enumerate(self._arenas):
            start = _address(arena) + self.rank * stride
            if start <= address and address + flat.nbytes <= start + stride:
                return number + 1, address - start
        return 0, 0

    def _source(self, peer: int, dtype: numpy.dtype, nbytes: int) -> Tuple[numpy.ndarray, bool]:
        """Where ``peer``'s contribution to a large all-reduce or an all-gather lies, as it
        published: its arena part (True: the array itself, in place) or its slot (False: for an
        all-reduce, a ring of rows)."""
        line = peer * _LINE_WORDS
        number = self._words[line + SOURCE]
        if number == 0:
            return self._slot(peer, self._slot_bytes).view(dtype), False
        arena, stride = self._arenas[number - 1]
        start = peer * stride + self._words[line + SOURCE_OFFSET]
        return arena[start : start + nbytes].view(dtype), True

    # --- counters and waiting ---------------------------------------------------------------
    def _bump(self, counter: int, amount: int = 1) -> None:
        """Advance this rank's ``counter``; wake the peers asleep on this rank, if any."""
        index = self.rank * _LINE_WORDS + counter
        words = self._words
        words[index] = (words[index] + amount) & _MASK
        for sleeping_on in self._sleeping_words:
            if words[sleeping_on] == self._sleeping_mark:
                _FUTEX.wake(self._control_address + 4 * index)
                return

    def _publish_source(self, number: int, offset: int) -> None:
        line = self.rank * _LINE_WORDS
        self._words[line + SOURCE] = number
        self._words[line + SOURCE_OFFSET] = offset

    def _wait_all(
        self, op: str, counter: int, target: int, deadline: float, probe: Optional[Callable[[int], None]] = None
    ) -> None:
        words = self._words
        for peer in self._peers:
            if not _reached(words[peer * _LINE_WORDS + counter], target):
                self._wait_for(op, peer, counter, target, deadline, probe)

    def _wait_for(
        self,
        op: str,
        peer: int,
        counter: int,
        target: int,
        deadline: float,
        probe: Optional[Callable[[int], None]] = None,
    ) -> None:
        """Return once ``peer``'s ``counter`` reaches ``target``: spin, then sleep on it.
        ``probe`` (if any) gets the peer's group rank before each sleep, and may raise."""
        index = peer * _LINE_WORDS + counter
        words = self._words
        if _reached(words[index], target):
            return
        spin_end = time.perf_counter() + SPIN_SECONDS
        while time.perf_counter() < spin_end:
            if _reached(words[index], target):
                return
            os.sched_yield()
        address = self._control_address + 4 * index
        sleeping_on = self.rank * _LINE_WORDS + SLEEPING_ON
        words[sleeping_on] = peer + 1
        try:
            while True:
                value = words[index]
                if _reached(value, target):
                    return
                try:
                    self._check_peer(op, peer, deadline)
                    if probe is not None:
                        probe(self._ranks[peer])
                except PeerFailedError:
                    # The peer may have reached the target and then failed (a mismatch it saw
                    # first) since the counter was read: its state was stored, and its
                    # connections were closed, after its counter.
                    if _reached(words[index], target):
                        return
                    raise
                _FUTEX.wait(address, value, SLEEP_SLICE_SECONDS)
        finally:
            words[sleeping_on] = 0

    def _check_peer(self, op: str, peer: int, deadline: float) -> None:
        """Raise naming ``peer`` when it failed, exited, or the timeout passed."""
        group_rank = self._ranks[peer]
        name, blamed = self._group.describe_rank(group_rank), self._group.global_ranks[group_rank]
        state = self._words[peer * _LINE_WORDS + STATE]
        if state != ACTIVE:
            why = "its operation failed" if state == FAILED else "it shut its group down"
            raise PeerFailedError(
                f"{self._group.describe(op)}: lost the connection to {name} ({why}); see that rank's log", blamed
            )
        if self._exited(peer):
            raise PeerFailedError(
                f"{self._group.describe(op)}: lost the connection to {name} "
                "(its process exited); that rank probably crashed, see its log",
                blamed,
            )
        self._group._note_waiting(op, group_rank, deadline)
        if time.monotonic() > deadline:
            raise PeerFailedError(
                f"{self._group.describe(op)}: timed out waiting for {name} (group timeout "
                f"{self._group.timeout:g} s); check that every rank issues the same collectives "
                "in the same order, or raise the timeout (PADDLE_PG_TIMEOUT in ms)",
                blamed,
            )

    def _exited(self, peer: int) -> bool:
        """True once ``peer``'s process is gone (its pidfd reads as ready). ``poll``, as
        ``select`` does not, takes descriptors numbered 1024 and up, which a process holding
        many files or sockets hands out."""
        watch = select.poll()
        watch.register(self._pidfds[peer], select.POLLIN)
        return bool(watch.poll(0))

    def _enter(self, op: str, deadline: float) -> None:
        """Wait until every rank finished the previous operation (its reads of our slot)."""
        self._wait_all(op, FINISHED, self._counts[FINISHED], deadline)

    def exchange_fingerprints(
        self, op: str, mine: bytes, timeout: float, probe: Callable[[int], None]
    ) -> List[Tuple[int, bytes]]:
        """Publish ``mine`` (an encoded fingerprint) and read every local peer's, as
        ``(group rank, bytes)``: the check before each collective, without a network round
        trip. Lines alternate between two banks: a rank can announce its next fingerprint only
        after every peer announced this one, that is after every peer read the previous one.
        A peer that is slow to announce is handed to ``probe`` (by group rank) before each
        sleep: it may be in a send or receive instead, which never announces here."""
        deadline = time.monotonic() + timeout
        lines, size = self._fingerprints, len(mine)
        bank = self._announced % 2 * self.size
        start = (bank + self.rank) * _FINGERPRINT_LINE
        lines[start : start + size] = mine
        self._bump(ANNOUNCED)
        self._announced += 1
        self._wait_all(op, ANNOUNCED, self._announced, deadline, probe)
        starts = [(peer, (bank + peer) * _FINGERPRINT_LINE) for peer in self._peers]
        return [(self._ranks[peer], bytes(lines[start : start + size])) for peer, start in starts]

    def _finish(self, written: int, reduced: int = 0) -> None:
        self._bump(FINISHED)
        self._counts[WRITTEN] += written
        self._counts[REDUCED] += reduced
        self._counts[FINISHED] += 1

    def mark_failed(self) -> None:
        """Tell the peers this rank gave up, and wake them so they notice at once."""
        self._leave(FAILED)

    def _leave(self, state: int) -> None:
        line = self.rank * _LINE_WORDS
        if self._words[line + STATE] == ACTIVE:
            self._words[line + STATE] = state
        for counter in (WRITTEN, REDUCED, FINISHED, ANNOUNCED):
            _FUTEX.wake(self._control_address + 4 * (line + counter))

    def close(self) -> None:
        """Leave the group: peers still waiting for this rank fail at once, naming it."""
        self._leave(CLOSED)
        for fd in self._pidfds:
            if fd >= 0:
                os.close(fd)
        self._pidfds = [-1] * self.size
        self._segment.close()

    # --- reductions in the TCP ring's order ---------------------------------------------------
    def _reduce_block(self, parts: List[numpy.ndarray], ufunc: Any, out: numpy.ndarray) -> None:
        """``out = x_r + (x_r-1 + (... + (x_r+2 + x_r+1)))``, ``parts[p]`` being rank p's
        ``x_p``: the order in which the TCP ring's reduce-scatter folds block ``r`` (this rank)."""
        n, r = self.size, self.rank
        if n == 2:
            ufunc(parts[r], parts[1 - r], out=out)
            return
        item = parts[r].itemsize
        step = CHUNK_BYTES // item
        for start in range(0, out.size, step):
            stop = min(start + step, out.size)
            partial = self._scratch[: (stop - start) * item].view(parts[r].dtype)
            ufunc(parts[(r + 2) % n][start:stop], parts[(r + 1) % n][start:stop], out=partial)
            for offset in range(3, n):
                ufunc(parts[(r + offset) % n][start:stop], partial, out=partial)
            ufunc(parts[r][start:stop], partial, out=out[start:stop])

    # --- collectives --------------------------------------------------------------------------
    def all_reduce(self, flat: numpy.ndarray, ufunc: Any) -> None:
        """Reduce ``flat`` in place over the local ranks (no division for AVG)."""
        if flat.size == 0:
            return
        deadline = time.monotonic() + self._group.timeout
        if flat.nbytes <= SMALL_ALL_REDUCE_BYTES:
            self._reserve(flat.nbytes)
            self._small_all_reduce(flat, ufunc, deadline)
        else:
            self._large_all_reduce(flat, ufunc, deadline)

    def _small_plan(self, flat: numpy.ndarray, bank: Optional[int] = None) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """(this rank's part, every rank's part as the rows of one array) of the slots, or of
        ``bank``, as arrays of ``flat``'s dtype and size: made once per dtype and size (until
        the slots grow), not per call."""
        key = (flat.dtype, flat.size, bank)
        plan = self._small_plans.get(key)
        if plan is None:
            if len(self._small_plans) >= _MAX_SMALL_PLANS:
                self._small_plans.clear()
            memory, stride = (
                (self._slots, self._slot_bytes) if bank is None else (self._banks[bank], SMALL_ALL_REDUCE_BYTES)
            )
            every = numpy.ndarray((self.size, flat.size), flat.dtype, memory, strides=(stride, flat.itemsize))
            plan = self._small_plans[key] = (every[self.rank], every)
        return plan

    def announced_all_reduce(
        self,
        flat: numpy.ndarray,
        ufunc: Any,
        fingerprint: bytes,
        timeout: float,
        check: Callable[[List[Tuple[int, bytes]]], None],
        probe: Callable[[int], None],
    ) -> None:
        """A small all-reduce (``flat`` of 1 to ``SMALL_ALL_REDUCE_BYTES`` bytes) whose encoded
        ``fingerprint`` is exchanged with its data: the ranks meet once instead of twice.

        The contribution goes into this rank's part of the bank of this announcement, then the
        fingerprint is published. Banks alternate with the fingerprint lines, so the argument
        that keeps those safe keeps these too: a rank announces its next operation only after
        its previous one is done, reads included. ``check`` gets the peers' fingerprints and
        raises on a mismatch before any peer's contribution is read; ``probe`` is that of
        :meth:`exchange_fingerprints`."""
        mine, every = self._small_plan(flat, self._announced % 2)
        mine[...] = flat
        check(self.exchange_fingerprints("all_reduce", fingerprint, timeout, probe))
        ufunc.reduce(every, axis=0, dtype=flat.dtype, out=flat)

    def _small_all_reduce(self, flat: numpy.ndarray, ufunc: Any, deadline: float) -> None:
        mine, every = self._small_plan(flat)
        self._enter("all_reduce", deadline)
        mine[...] = flat
        self._bump(WRITTEN)
        self._wait_all("all_reduce", WRITTEN, self._counts[WRITTEN] + 1, deadline)
        ufunc.reduce(every, axis=0, dtype=flat.dtype, out=flat)
        self._finish(1)

    def _large_all_reduce(self, flat: numpy.ndarray, ufunc: Any, deadline: float) -> None:
        n, r = self.size, self.rank
        points = _split_points(flat.size, n)
        chunk = CHUNK_BYTES // flat.itemsize
        rows = -(-max(points[b + 1] - points[b] for b in range(n)) // chunk)

        def row(block: int, k: int) -> slice:
            """Where row ``k`` of ``block`` lies in the array."""
            lo = min(points[block] + k * chunk, points[block + 1])
            return slice(lo, min(lo + chunk, points[block + 1]))

        def ring(block: int, k: int) -> slice:
            """Where it lies in a slot: each block has ``RING_ROWS`` rows there, used in turn."""
            part = row(block, k)
            lo = (block * RING_ROWS + k % RING_ROWS) * chunk
            return slice(lo, lo + part.stop - part.start)

        self._reserve(n * RING_ROWS * CHUNK_BYTES)
        self._enter("all_reduce", deadline)
        arena, offset = self._arena_place(flat)
        self._publish_source(arena, offset)
        mine = self._slot(r, self._slot_bytes).view(flat.dtype)
        if arena:
            self._bump(WRITTEN, rows)
        written, reduced = self._counts[WRITTEN], self._counts[REDUCED]
        parts: List[Tuple[numpy.ndarray, Any]] = []  # per rank: its array and where rows lie
        for step in range(rows + 2):
            if step < rows and not arena:
                if step >= RING_ROWS:
                    # Every peer must have copied out row step - RING_ROWS, which it does before
                    # it reduces row step - RING_ROWS + 2. It reduces that row at its step
                    # step - RING_ROWS + 3 <= step - 1, which waits only for rows this rank has
                    # written and reduced already (so, with RING_ROWS >= 4, no deadlock).
                    self._wait_all("all_reduce", REDUCED, reduced + step - RING_ROWS + 3, deadline)
                for block in range(n):
                    if block != r:
                        mine[ring(block, step)] = flat[row(block, step)]
                self._bump(WRITTEN)
            k = step - 1
            if 0 <= k < rows:
                self._wait_all("all_reduce", WRITTEN, written + k + 1, deadline)
                if not parts:  # this rank's own contribution is read where it lies
                    parts = [(flat, row)] * n
                    for peer in self._peers:
                        source, in_place = self._source(peer, flat.dtype, flat.nbytes)
                        parts[peer] = (source, row if in_place else ring)
                out = flat[row(r, k)] if arena else mine[ring(r, k)]
                self._reduce_block([array[where(r, k)] for array, where in parts], ufunc, out)
                self._bump(REDUCED)
            k = step - 2
            if 0 <= k < rows:
                self._wait_all("all_reduce", REDUCED, reduced + k + 1, deadline)
                for block in range(n):
                    if block != r:
                        array, where = parts[block]
                        flat[row(block, k)] = array[where(block, k)]
                    elif not arena:
                        flat[row(r, k)] = mine[ring(r, k)]
        self._finish(rows, rows)
        if arena:  # peers read this array in place: they must be done before it changes
            self._wait_all("all_reduce", FINISHED, self._counts[FINISHED], deadline)

    def broadcast(self, flat: numpy.ndarray, src: int) -> None:
        """Copy local rank ``src``'s ``flat`` into every local rank's, chunk by chunk."""
        if flat.size == 0:
            return
        deadline = time.monotonic() + self._group.timeout
        self._reserve(flat.nbytes)
        self._enter("broadcast", deadline)
        raw = flat.view(numpy.uint8)
        slot = self._slot(src, flat.nbytes)
        rows = -(-flat.nbytes // CHUNK_BYTES)
        written = self._counts[WRITTEN]
        if self.rank != src:
            self._bump(WRITTEN, rows)
        for k in range(rows):
            part = slice(k * CHUNK_BYTES, (k + 1) * CHUNK_BYTES)
            if self.rank == src:
                slot[part] = raw[part]
                self._bump(WRITTEN)
            else:
                self._wait_for("broadcast", src, WRITTEN, written + k + 1, deadline)
                raw[part] = slot[part]
        self._finish(rows)

    def all_gather(self, out_flat: numpy.ndarray, flat: numpy.ndarray) -> None:
        """``out_flat`` (size x flat.size) receives every local rank's ``flat`` in rank order.

        When ``out_flat`` lies in an arena (:meth:`allocate`), this rank's ``flat`` goes into
        its own row there (nothing to copy when ``flat`` is that row) and the peers read the row
        in place; otherwise it goes through this rank's slot. Each rank publishes which."""
        if flat.size == 0:
            return
        deadline = time.monotonic() + self._group.timeout
        rows = out_flat.view(numpy.uint8).reshape(self.size, flat.nbytes)
        own = rows[self.rank]
        arena, offset = self._arena_place(own)
        self._reserve(flat.nbytes)  # every rank grows its slots at the same operation
        self._enter("all_gather", deadline)
        if arena:
            if _address(flat) != _address(own):
                own[:] = flat.view(numpy.uint8)
        else:
            self._slot(self.rank, flat.nbytes)[:] = flat.view(numpy.uint8)
        self._publish_source(arena, offset)
        self._bump(WRITTEN)
        self._wait_all("all_gather", WRITTEN, self._counts[WRITTEN] + 1, deadline)
        for peer in self._peers:
            source, _ = self._source(peer, numpy.uint8, flat.nbytes)
            rows[peer] = source[: flat.nbytes]
        if not arena:
            own[:] = flat.view(numpy.uint8)
        self._finish(1)
        if arena:  # peers read this row in place: they must be done before it changes
            self._wait_all("all_gather", FINISHED, self._counts[FINISHED], deadline)

    def reduce_scatter(self, out_flat: numpy.ndarray, in_flat: numpy.ndarray, ufunc: Any) -> None:
        """``out_flat`` gets block ``rank`` of the reduction of ``in_flat`` (no AVG division)."""
        block = out_flat.size
        if block == 0:
            return
        deadline = time.monotonic() + self._group.timeout
        self._reserve(in_flat.nbytes)
        self._enter("reduce_scatter", deadline)
        # Only the blocks the peers reduce go into the slot; this rank's own block is read
        # where it lies (its slot part stays unwritten and unread).
        mine = self._slot(self.rank, in_flat.nbytes).view(in_flat.dtype)
        for peer in self._peers:
            part = slice(peer * block, (peer + 1) * block)
            mine[part] = in_flat[part]
        self._bump(WRITTEN)
        self._wait_all("reduce_scatter", WRITTEN, self._counts[WRITTEN] + 1, deadline)
        lo = self.rank * block
        parts = [
            in_flat[lo : lo + block]
            if peer == self.rank
            else self._slot(peer, in_flat.nbytes).view(in_flat.dtype)[lo : lo + block]
            for peer in range(self.size)
        ]
        self._reduce_block(parts, ufunc, out_flat)
        self._finish(1)

    def barrier(self, timeout: float) -> None:
        """Return once every local rank has entered."""
        deadline = time.monotonic() + timeout
        self._enter("barrier", deadline)
        self._bump(WRITTEN)
        self._wait_all("barrier", WRITTEN, self._counts[WRITTEN] + 1, deadline)
        self._finish(1)


class SharedMemoryGlooGroup(GlooProcessGroup):
    """The gloo group with shared memory between ranks of one host (see the module docstring).

    Set-up adds to the TCP mesh: host discovery through the store, the host's segment when more
    than one rank shares it, and, when the group spans several hosts of which one has several
    ranks, a TCP group of one leader (lowest rank) per host for the hierarchical all-reduce.
    """

    def __init__(
        self, store: Any, rank: int, size: int, *, name: str, timeout: float, global_ranks: Optional[List[int]] = None
    ) -> None:
        super().__init__(store, rank, size, name=name, timeout=timeout, global_ranks=global_ranks)
        self._local: Optional[SharedMemoryTransport] = None
        self._leaders: Optional[GlooProcessGroup] = None
        # A small all-reduce's call and fingerprint, left by _exchange_fingerprints for the
        # all-reduce (which runs next) to announce with its data.
        self._announcement: Optional[Tuple[Collective, bytes]] = None
        self._hierarchical = False
        if size > 1 and SUPPORTED:
            self._attach(store)

    def _attach(self, store: Any) -> None:
        instance = store.add(f"shm/{self.name}/instances/{self.rank}", 1)
        prefix = f"shm/{self.name}/{instance}"
        layout = discover_hosts(store, prefix, self.rank, self.size, self.timeout)
        local = layout.local_ranks
        self._hierarchical = len(layout.hosts) > 1 and max(map(len, layout.hosts)) > 1
        if len(local) > 1:
            segment = SharedSegment.establish(
                store, f"{prefix}/segment/{layout.host}", local.index(self.rank), len(local), self.name, self.timeout
            )
            self._local = SharedMemoryTransport(self, segment, local, [layout.pids[peer] for peer in local])
        if self._hierarchical and self.rank in layout.leaders:
            self._leaders = GlooProcessGroup(
                store,
                layout.host,
                len(layout.hosts),
                name=f"{self.name}/leaders/{instance}",
                timeout=self.timeout,
                global_ranks=[self.global_ranks[leader] for leader in layout.leaders],
            )

    def allocate(self, shape: Sequence[int], dtype: Any = "float32") -> numpy.ndarray:
        """An array in this host's shared segment, which ``all_reduce`` reads in place.

        Collective over the ranks of the host: each calls it with the same shape and dtype in
        the same order. Without local peers it is a plain NumPy array.
        """
        if self._local is None:
            return super().allocate(shape, dtype)
        shape, dtype = tuple(shape), numpy.dtype(dtype)
        allocated: List[numpy.ndarray] = []
        # Issued like a collective, so it takes its place after the operations queued before
        # it: the segment's layout then grows in the same order on every rank.
        self._issue(
            Collective("allocate", dtype, math.prod(shape), self.timeout),
            lambda: allocated.append(self._local.allocate(shape, dtype)),
            True,
        )
        return allocated[0]

    def _exchange_fingerprints(self, call: Collective, mine: bytes) -> List[Tuple[int, bytes]]:
        """Through the segment when it holds the whole group (point to point stays on TCP); a
        small all-reduce's, together with its data (see ``announced_all_reduce``)."""
        if not self._spans_group or call.op in ("send", "recv"):
            return super()._exchange_fingerprints(call, mine)
        if call.op == "all_reduce" and 0 < call.count * call.dtype.itemsize <= SMALL_ALL_REDUCE_BYTES:
            self._announcement = (call, mine)
            return []
        return self._local.exchange_fingerprints(call.op, mine, call.timeout, self._point_to_point_probe(call, mine))

    def _point_to_point_probe(self, call: Collective, mine: bytes) -> Callable[[int], None]:
        """What a collective's wait for a peer's announcement runs before each sleep: when the
        group's TCP connection from that peer holds bytes, the peer is in a send or receive
        (whose fingerprint leads them), which never announces in the segment. The two ranks then
        swap fingerprints over that connection, so both raise at once, naming both operations,
        instead of each waiting for the other until the timeout."""

        def probe(peer: int) -> None:
            watch = select.poll()
            watch.register(self._peers[peer], select.POLLIN)
            if watch.poll(0):
                incoming = self._fingerprints_in[0]
                self._transfer(
                    call.op,
                    time.monotonic() + call.timeout,
                    peer,
                    [SendPiece(numpy.frombuffer(mine, numpy.uint8))],
                    peer,
                    [RecvPiece(incoming)],
                )
                self._compare_fingerprints(call, mine, mine, [(peer, incoming.tobytes())])

        return probe

    @property
    def _spans_group(self) -> bool:
        return self._local is not None and not self._hierarchical

    def _all_reduce(self, array: numpy.ndarray, op: ReduceOp) -> None:
        if self._local is None and not self._hierarchical:
            return super()._all_reduce(array, op)
        flat = array.reshape(-1)
        if self._announcement is not None:
            (call, mine), self._announcement = self._announcement, None
            self._local.announced_all_reduce(
                flat,
                _REDUCERS[op],
                mine,
                call.timeout,
                lambda received: self._compare_fingerprints(call, mine, mine, received),
                self._point_to_point_probe(call, mine),
            )
        elif self._local is not None:
            self._local.all_reduce(flat, _REDUCERS[op])
        if self._hierarchical:
            if self._leaders is not None and flat.size:
                self._leaders.all_reduce(flat, ReduceOp.SUM if op == ReduceOp.AVG else op)
            if self._local is not None:
                self._local.broadcast(flat, 0)
        if op == ReduceOp.AVG:
            divide_by_size(array, self.size)
        return None

    def _broadcast(self, array: numpy.ndarray, src: int) -> None:
        if not self._spans_group:
            return super()._broadcast(array, src)
        return self._local.broadcast(array.reshape(-1), src)

    def _all_gather(self, out_array: numpy.ndarray, array: numpy.ndarray) -> None:
        if not self._spans_group:
            return super()._all_gather(out_array, array)
        return self._local.all_gather(out_array.reshape(-1), array.reshape(-1))

    def _reduce_scatter(self, out_array: numpy.ndarray, in_array: numpy.ndarray, op: ReduceOp) -> None:
        if not self._spans_group:
            return super()._reduce_scatter(out_array, in_array, op)
        self._local.reduce_scatter(out_array.reshape(-1), in_array.reshape(-1), _REDUCERS[op])
        if op == ReduceOp.AVG:
            divide_by_size(out_array, self.size)
        return None

    def _barrier(self, timeout: float) -> None:
        if not self._spans_group:
            return super()._barrier(timeout)
        return self._local.barrier(timeout)

    def _on_failure(self) -> None:
        if self._local is not None:
            self._local.mark_failed()
        super()._on_failure()

    def _close(self) -> None:
        super()._close()
        if self._leaders is not None:
            self._leaders.shutdown()
        if self._local is not None:
            self._local.close()
