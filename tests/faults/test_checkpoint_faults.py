"""Crafted, damaged and half-written checkpoints: each case states its bound.

Every crafted minidp checkpoint below is refused with a ValueError naming the file and the entry,
in under 2 s and with a tracemalloc peak under 4 MiB (the 2^40-element header, the 2.1 GB zip
bomb, the 5000-deep manifest, the array referenced 3000 times and 3000 directory records sharing
one entry's bytes included). A writer SIGKILLed mid-save leaves a temporary file that the next
save removes, while a live writer's is kept. Every dtype round-trips bit for bit. Random damage
to a minidp checkpoint or a Paddle pickle gives a ValueError naming the file, or the original
content, never anything else, and so does random damage to an array's NPY header (a header
that is not a Python literal, or declares a negative size or more than 64 dimensions, included);
crafted Paddle pickles are refused within the same memory bound.
"""

import hashlib
import io
import json
import os
import pickle
import signal
import struct
import subprocess
import sys
import textwrap
import time
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import minidp
from minidp.core import backend
from minidp import serialization
from minidp.paddle_checkpoint import load_paddle_checkpoint
from minidp.serialization import CheckpointError, load, save

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
PEAK_BOUND = 4 << 20
SECONDS_BOUND = 2.0


def npy_header(dtype, shape, fortran_order=False):
    """The NPY header of an array of ``dtype`` and ``shape`` (its data not included)."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buffer, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": fortran_order, "shape": shape}
    )
    return buffer.getvalue()


def npy(array):
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def manifest(tree, entries, version=2):
    meta = {"format": "minidp-checkpoint", "version": version, "tree": tree}
    if version >= 2:
        meta["sha256"] = [hashlib.sha256(entry).hexdigest() for entry in entries]
    return json.dumps(meta).encode()


def write_checkpoint(path, entries, tree, version=2, meta=None):
    """A checkpoint laid out as minidp.save lays it out, from raw entry bytes (hashes matching)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for index, entry in enumerate(entries):
            archive.writestr(f"arrays/{index}.npy", entry)
        archive.writestr("minidp.json", manifest(tree, entries, version) if meta is None else meta)
    return path


def refused(path, entry, where=""):
    """Load ``path``: it must raise a ValueError naming it and ``entry`` within the bounds."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(ValueError) as caught:
            load(path)
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(caught.value)
    assert str(path) in message and f"entry '{entry}'" in message and where in message, message
    assert peak < PEAK_BOUND, f"peak {peak} bytes while refusing {path}"
    assert elapsed < SECONDS_BOUND, f"{elapsed:.2f} s to refuse {path}"
    return message


def rewrite_entries(path, replace):
    """Rewrite the archive at ``path`` with ``replace(name, data)`` as each entry's bytes (new CRCs)."""
    with zipfile.ZipFile(path) as archive:
        entries = [(name, archive.read(name)) for name in archive.namelist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, data in entries:
            archive.writestr(name, replace(name, data))


# --- integrity ----------------------------------------------------------------------------------
def test_two_same_shape_arrays_swapped_are_caught(tmp_path):
    path = tmp_path / "swapped.ckpt"
    save({"a": np.arange(4.0), "b": np.arange(4.0) + 10}, path)
    with zipfile.ZipFile(path) as archive:
        first, second, meta = (archive.read(name) for name in ("arrays/0.npy", "arrays/1.npy", "minidp.json"))
    rewrite_entries(path, {"arrays/0.npy": second, "arrays/1.npy": first, "minidp.json": meta}.get)
    message = refused(path, "arrays/0.npy", "obj['a']")
    assert "SHA-256" in message


def test_an_entry_altered_with_a_valid_crc_is_caught(tmp_path):
    path = tmp_path / "altered.ckpt"
    save({"w": minidp.to_tensor(np.zeros(16, np.float32))}, path)
    altered = npy(np.ones(16, np.float32))
    rewrite_entries(path, lambda name, data: altered if name == "arrays/0.npy" else data)
    assert "SHA-256" in refused(path, "arrays/0.npy", "obj['w']")


def test_a_bit_flip_in_array_data_is_caught(tmp_path):
    path = tmp_path / "flipped.ckpt"
    save({"w": np.arange(1000, dtype=np.int64)}, path)
    data = bytearray(path.read_bytes())
    data[data.index(np.int64(500).tobytes())] ^= 0x01
    path.write_bytes(bytes(data))
    refused(path, "arrays/0.npy", "obj['w']")


# --- allocation bounds --------------------------------------------------------------------------
def test_a_header_declaring_two_to_the_forty_elements_is_refused_before_allocating(tmp_path):
    entry = npy_header("<f8", (2**40,)) + bytes(64)
    path = write_checkpoint(tmp_path / "huge_header.ckpt", [entry], ["ndarray", 0])
    assert "declares" in refused(path, "arrays/0.npy", "obj")


def test_a_header_larger_than_its_data_is_refused(tmp_path):
    entry = npy_header("<f8", (3,)) + bytes(16)
    path = write_checkpoint(tmp_path / "short.ckpt", [entry], ["dict", [[["str", "w"], ["ndarray", 0]]]])
    refused(path, "arrays/0.npy", "obj['w']")


def deflated_bomb(path, name, head, inflated_mib):
    """An archive whose one entry, ``name``, is ``head`` then ``inflated_mib`` MiB of zeros, deflated
    (about 1 KiB per MiB), with the sizes and CRC a naive reader would trust."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros = bytes(1 << 20)
    prefix = compressor.compress(head) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    stream = prefix + block * inflated_mib + compressor.flush()
    crc = zlib.crc32(head)
    for _ in range(inflated_mib):
        crc = zlib.crc32(zeros, crc)
    size = len(head) + (inflated_mib << 20)
    # Write the stream as a stored entry, then mark it deflated in both headers.
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr(name, stream)
    data = bytearray(path.read_bytes())
    local = 0
    central = data.index(b"PK\x01\x02")
    struct.pack_into("<H", data, local + 8, zipfile.ZIP_DEFLATED)
    struct.pack_into("<I", data, local + 14, crc)
    struct.pack_into("<I", data, local + 22, size)
    struct.pack_into("<H", data, central + 10, zipfile.ZIP_DEFLATED)
    struct.pack_into("<I", data, central + 16, crc)
    struct.pack_into("<I", data, central + 24, size)
    path.write_bytes(bytes(data))
    with zipfile.ZipFile(path) as archive:  # a well-formed bomb: zipfile itself would inflate it
        (info,) = archive.infolist()
        assert info.file_size == size and info.compress_size == len(stream) < size // 500
    return path


def test_a_zip_bomb_array_entry_is_refused_without_inflating(tmp_path):
    path = deflated_bomb(tmp_path / "bomb.ckpt", "arrays/0.npy", npy_header("<f8", (2100 << 17,)), 2100)
    assert "compressed" in refused(path, "arrays/0.npy")


def test_a_zip_bomb_manifest_is_refused_without_inflating(tmp_path):
    path = deflated_bomb(tmp_path / "bomb_meta.ckpt", "minidp.json", b'{"format": "', 256)
    assert "compressed" in refused(path, "minidp.json")


def test_a_manifest_5000_levels_deep_is_refused_before_parsing(tmp_path):
    tree = "[" * 5000 + "]" * 5000
    meta = f'{{"format": "minidp-checkpoint", "version": 2, "sha256": [], "tree": {tree}}}'.encode()
    path = write_checkpoint(tmp_path / "deep.ckpt", [], None, meta=meta)
    assert "5001 levels" in refused(path, "minidp.json")


def test_a_manifest_over_the_size_bound_is_refused_before_reading(tmp_path):
    meta = b'{"format": "minidp-checkpoint", "pad": "' + b"x" * serialization.MAX_MANIFEST_BYTES + b'"}'
    path = write_checkpoint(tmp_path / "fat.ckpt", [], None, meta=meta)
    assert "bytes" in refused(path, "minidp.json")


def test_an_array_referenced_3000_times_is_refused_at_the_second_reference(tmp_path):
    entry = npy(np.zeros(1 << 17))  # 1 MiB
    path = write_checkpoint(tmp_path / "shared.ckpt", [entry], ["list", [["ndarray", 0]] * 3000])
    assert "second time" in refused(path, "arrays/0.npy", "obj[1]")


def test_3000_directory_records_sharing_one_entrys_bytes_are_refused(tmp_path):
    entry = npy(np.zeros(1 << 17))  # 1 MiB
    path = write_checkpoint(tmp_path / "overlap.ckpt", [entry], ["ndarray", 0])
    data = path.read_bytes()
    directory = data.index(b"PK\x01\x02")
    end = data.index(b"PK\x05\x06")
    record = data[directory : data.index(b"PK\x01\x02", directory + 4)]  # arrays/0.npy's record
    copies = b"".join(record.replace(b"arrays/0.npy", f"x{i:07d}.npy".encode()) for i in range(1, 3000))
    records = data[directory:end] + copies
    tail = bytearray(data[end:])
    struct.pack_into("<HHI", tail, 8, 3001, 3001, len(records))
    path.write_bytes(data[:directory] + records + bytes(tail))
    assert "overlap" in refused(path, "x0000001.npy")


@pytest.mark.parametrize(
    "layout, entry",
    [
        ("unlisted", "arrays/1.npy"),
        ("missing", "arrays/0.npy"),
        ("unreferenced", "arrays/1.npy"),
        ("object-dtype", "arrays/0.npy"),
        ("bad-reference", "minidp.json"),
        ("future-version", "minidp.json"),
        ("malformed-node", "minidp.json"),
        ("bad-hash-list", "minidp.json"),
    ],
)
def test_other_inconsistent_archives_are_refused_naming_the_entry(tmp_path, layout, entry):
    good = npy(np.ones(3))
    path = tmp_path / f"{layout}.ckpt"
    if layout == "unlisted":
        write_checkpoint(path, [good], ["ndarray", 0])
        with zipfile.ZipFile(path, "a") as archive:
            archive.writestr("arrays/1.npy", good)
    elif layout == "missing":
        write_checkpoint(path, [], ["ndarray", 0], meta=manifest(["ndarray", 0], [good]))
    elif layout == "unreferenced":
        write_checkpoint(path, [good, good], ["ndarray", 0])
    elif layout == "object-dtype":
        pickled = io.BytesIO()
        np.save(pickled, np.array([{}], dtype=object), allow_pickle=True)
        write_checkpoint(path, [pickled.getvalue()], ["ndarray", 0])
    elif layout == "bad-reference":
        write_checkpoint(path, [good], ["ndarray", 7])
    elif layout == "future-version":
        write_checkpoint(path, [good], ["ndarray", 0], version=3)
    elif layout == "malformed-node":
        write_checkpoint(path, [good], ["dict", [["ndarray", 0]]])
    else:
        write_checkpoint(
            path,
            [good],
            ["ndarray", 0],
            meta=manifest(["ndarray", 0], [good]).replace(b'"sha256": ["', b'"sha256": ["z'),
        )
    refused(path, entry)


def test_load_errors_are_checkpoint_errors(tmp_path):
    path = write_checkpoint(tmp_path / "c.ckpt", [npy_header("<f8", (2**40,))], ["ndarray", 0])
    with pytest.raises(CheckpointError):
        load(path)
    assert issubclass(CheckpointError, ValueError)


# --- compatibility ------------------------------------------------------------------------------
def test_version_1_checkpoints_without_hashes_still_load_with_the_size_checks(tmp_path):
    arrays = [np.arange(6, dtype=np.float32).reshape(2, 3), np.asfortranarray(np.arange(6.0).reshape(2, 3))]
    tree = ["dict", [[["str", "t"], ["tensor", 0]], [["str", "f"], ["ndarray", 1]], [["str", "n"], ["int", 3]]]]
    path = write_checkpoint(tmp_path / "v1.ckpt", [npy(a) for a in arrays], tree, version=1)
    back = load(path)
    np.testing.assert_array_equal(back["t"].numpy(), arrays[0])
    np.testing.assert_array_equal(back["f"], arrays[1])
    assert back["n"] == 3
    huge = write_checkpoint(tmp_path / "v1_huge.ckpt", [npy_header("<f8", (2**40,))], ["ndarray", 0], version=1)
    refused(huge, "arrays/0.npy")


def test_saving_again_writes_version_2_with_a_hash_per_entry(tmp_path):
    path = tmp_path / "v2.ckpt"
    save({"a": np.ones(2), "b": [np.zeros(3)]}, path)
    with zipfile.ZipFile(path) as archive:
        meta = json.loads(archive.read("minidp.json"))
        assert meta["version"] == 2 and len(meta["sha256"]) == 2
        assert all(info.compress_type == zipfile.ZIP_STORED for info in archive.infolist())
        assert meta["sha256"][1] == hashlib.sha256(archive.read("arrays/1.npy")).hexdigest()


def test_a_structure_deeper_than_the_bound_is_refused_at_save(tmp_path):
    nested = []
    for _ in range(serialization.MAX_MANIFEST_DEPTH):
        nested = [nested]
    with pytest.raises(ValueError, match="flatter"):
        save({"deep": nested}, tmp_path / "deep.ckpt")
    assert os.listdir(tmp_path) == []


# --- round trips --------------------------------------------------------------------------------
DTYPES = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "<U5",
    "S3",
]


@pytest.mark.parametrize("dtype", DTYPES + ["bfloat16"])
def test_every_dtype_round_trips_bit_for_bit(tmp_path, dtype):
    dtype = backend.BFLOAT16 if dtype == "bfloat16" else np.dtype(dtype)
    raw = np.random.default_rng(0).integers(0, 256, size=24 * dtype.itemsize, dtype=np.uint8)
    array = raw.view(dtype).reshape(4, -1) if dtype.kind not in "bUS" else raw[:24].astype(dtype).reshape(4, 6)
    obj = {
        "c": array,
        "f": np.asfortranarray(array),
        "strided": array[:, ::2],
        "0d": array[0, 0, None].reshape(()),
        "empty": array[:0],
    }
    save(obj, tmp_path / "all.ckpt")
    back = load(tmp_path / "all.ckpt")
    for key, value in obj.items():
        assert back[key].dtype == value.dtype and back[key].shape == value.shape, key
        assert np.ascontiguousarray(back[key]).tobytes() == np.ascontiguousarray(value).tobytes(), key


@pytest.mark.parametrize("dtype", list(backend.DTYPES))
def test_every_tensor_dtype_round_trips_as_a_tensor(tmp_path, dtype):
    values = np.arange(-6, 6).reshape(3, 4).astype(backend.DTYPES[dtype])
    save({"t": minidp.to_tensor(values)}, tmp_path / "t.ckpt")
    back = load(tmp_path / "t.ckpt")["t"]
    assert isinstance(back, minidp.Tensor) and back.dtype == minidp.to_tensor(values).dtype
    assert back.numpy().tobytes() == values.tobytes()


# --- killed writers -----------------------------------------------------------------------------
STALLED_WRITER = textwrap.dedent("""
    import sys, time
    import numpy
    import minidp

    write_array = numpy.lib.format.write_array

    def write_then_stall(entry, array, allow_pickle=False):
        write_array(entry, array, allow_pickle=allow_pickle)
        print("stalled", flush=True)
        time.sleep(60)

    numpy.lib.format.write_array = write_then_stall
    minidp.save({"w": numpy.ones(8 << 20)}, sys.argv[1])  # 64 MiB, stalled once written
""")


def start_stalled_writer(target):
    """A process that is mid-save to ``target`` (its 64 MiB temporary file written, not renamed)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    writer = subprocess.Popen([sys.executable, "-c", STALLED_WRITER, str(target)], stdout=subprocess.PIPE, env=env)
    assert writer.stdout.readline() == b"stalled\n"
    return writer


def temporaries(directory):
    return sorted(name for name in os.listdir(directory) if name.endswith(".tmp"))


def test_a_sigkilled_writers_temporary_is_removed_by_the_next_save_but_a_live_ones_is_kept(tmp_path):
    target = tmp_path / "model.ckpt"
    writer = start_stalled_writer(target)
    try:
        (stale,) = temporaries(tmp_path)
        assert f".{writer.pid}." in stale and (tmp_path / stale).stat().st_size >= 64 << 20
        save({"w": np.zeros(2)}, target)  # the writer is alive: its file stays
        assert temporaries(tmp_path) == [stale]
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=10)
        writer.stdout.close()
    assert writer.returncode == -signal.SIGKILL and temporaries(tmp_path) == [stale]
    started = time.perf_counter()
    save({"w": np.ones(2)}, target)
    assert time.perf_counter() - started < SECONDS_BOUND
    assert temporaries(tmp_path) == [] and os.listdir(tmp_path) == ["model.ckpt"]
    np.testing.assert_array_equal(load(target)["w"], np.ones(2))


def test_other_hosts_and_other_targets_temporaries_are_kept(tmp_path):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    pid = int(dead.stdout)
    host = serialization._host_tag()
    kept = [
        f".model.ckpt.other-host.{pid}.0123abcd.tmp",
        f".model.ckpt.v2.{host}.{pid}.0123abcd.tmp",
        f".model.ckpt.{host}.{os.getpid()}.0123abcd.tmp",
    ]
    removed = f".model.ckpt.{host}.{pid}.0123abcd.tmp"
    for name in [*kept, removed]:
        (tmp_path / name).write_bytes(b"partial")
    save({"a": 1}, tmp_path / "model.ckpt")
    assert temporaries(tmp_path) == sorted(kept)


# --- fuzzing ------------------------------------------------------------------------------------
def sample_checkpoint(path):
    obj = {
        "w": minidp.to_tensor(np.arange(12, dtype=np.float32).reshape(3, 4)),
        "step": 7,
        "opt": {"m": [np.ones(5, np.float64), (1.5, None)]},
    }
    save(obj, path)
    return path.read_bytes()


damage = st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1, max_size=4)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flips=damage, cut=st.one_of(st.none(), st.floats(0, 1)))
def test_damaged_minidp_checkpoints_load_unchanged_or_raise_a_named_value_error(tmp_path, flips, cut):
    original = tmp_path / "original.ckpt"
    data = bytearray(original.read_bytes() if original.exists() else sample_checkpoint(original))
    for where, value in flips:
        data[int(where * len(data))] = value
    if cut is not None:
        data = data[: int(cut * len(data))]
    damaged = tmp_path / "damaged.ckpt"
    damaged.write_bytes(bytes(data))
    try:
        back = load(damaged)
    except ValueError as error:
        assert str(damaged) in str(error)
        return
    expected = load(original)
    assert back["step"] == 7 and back["opt"]["m"][1] == (1.5, None)
    np.testing.assert_array_equal(back["w"].numpy(), expected["w"].numpy())
    np.testing.assert_array_equal(back["opt"]["m"][0], expected["opt"]["m"][0])


PADDLE_FILES = [
    (FIXTURES / name).read_bytes()
    for name in ("paddle_mlp.pdparams", "paddle_mlp_adam.pdopt", "paddle_misc_protocol2.pdparams")
]


def load_pickle_bytes(data):
    """Only a result or a ValueError naming the file may come out."""
    try:
        load_paddle_checkpoint("fuzzed.pdparams", io.BytesIO(data), return_numpy=True)
    except ValueError as error:
        assert "fuzzed.pdparams" in str(error)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=256))
def test_random_bytes_after_the_pickle_marker_only_raise_value_errors(data):
    load_pickle_bytes(b"\x80" + data)


@settings(max_examples=300, deadline=None)
@given(which=st.sampled_from(range(len(PADDLE_FILES))), flips=damage, cut=st.one_of(st.none(), st.floats(0, 1)))
def test_damaged_paddle_checkpoints_only_raise_value_errors(which, flips, cut):
    data = bytearray(PADDLE_FILES[which])
    for where, value in flips:
        data[int(where * len(data))] = value
    load_pickle_bytes(bytes(data if cut is None else data[: int(cut * len(data))]))


class _Reduces:
    def __init__(self, reduced):
        self.reduced = reduced

    def __reduce__(self):
        return self.reduced


def array_pickle_with_dtype_flags(flags):
    """A protocol-2 pickle of a float32 array whose dtype state carries ``flags``. NumPy's
    dtype.__setstate__ trusts them: with 1 (holds objects) NumPy's own reconstruction leaves
    arrays that fail every operation, and other values found by fuzzing crash the interpreter."""
    data = pickle.dumps({"w": np.ones(4, np.float32)}, protocol=2)
    flags_field = b"J\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00t"
    assert data.count(flags_field) == 1
    return data.replace(flags_field, flags_field[:-3] + bytes([ord("K"), flags]) + b"t")


@pytest.mark.parametrize(
    "payload, expected",
    [
        (array_pickle_with_dtype_flags(1), "state of dtype"),
        (pickle.dumps(_Reduces((np.ndarray, ((1 << 40,),))), protocol=4), "cannot be read"),
        (pickle.dumps(_Reduces((bytes, (1 << 40,))), protocol=2), "bytes"),
        (b"\x80\x04\x96" + struct.pack("<Q", 1 << 40) + b".", "bytearray"),
        (b"\x80\x04\x8e" + struct.pack("<Q", 1 << 62) + b".", "remain"),
        (b"\x80\x04\x95" + struct.pack("<Q", 1 << 62) + b".", "remain"),
    ],
    ids=["dtype-flags", "ndarray-call", "bytes-of-size", "bytearray8", "bytes8-length", "frame-length"],
)
def test_crafted_paddle_pickles_are_refused_within_bounds(tmp_path, payload, expected):
    path = tmp_path / "crafted.pdparams"
    path.write_bytes(payload)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=expected) as caught:
            load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(path) in str(caught.value) and peak < PEAK_BOUND


def test_a_huge_pickle_memo_index_costs_nothing(tmp_path):
    path = tmp_path / "memo.pdparams"
    path.write_bytes(b"\x80\x04N" + b"r" + struct.pack("<I", 2**32 - 1) + b".")
    tracemalloc.start()
    try:
        assert load(path) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < PEAK_BOUND


# --- NPY headers --------------------------------------------------------------------------------
def with_header(path, header):
    """Give the one array entry of the checkpoint at ``path`` the NPY header ``header`` (its data
    kept) and the manifest the entry's new hash, so that only the header is at fault."""
    with zipfile.ZipFile(path) as archive:
        entry = archive.read("arrays/0.npy")
        meta = json.loads(archive.read("minidp.json"))
    entry = header + entry[entry.index(b"\n") + 1 :]
    meta["sha256"][0] = hashlib.sha256(entry).hexdigest()
    rewrite_entries(path, lambda name, data: entry if name == "arrays/0.npy" else json.dumps(meta).encode())
    return path


@pytest.mark.parametrize(
    "saved, shape",
    [(np.ones(1000), (-1, -1000)), (np.ones(0), (0, -5)), (np.ones(1000), (1000,) + (1,) * 64)],
    ids=["negative", "zero-and-negative", "65-dimensions"],
)
def test_a_header_declaring_an_impossible_shape_is_refused_naming_the_entry(tmp_path, saved, shape):
    path = tmp_path / "shape.ckpt"
    save({"w": saved}, path)
    refused(with_header(path, npy_header("<f8", shape)), "arrays/0.npy", "obj['w']")


def test_a_header_that_is_not_a_python_literal_is_refused_naming_the_entry(tmp_path):
    path = tmp_path / "token.ckpt"
    save({"w": np.ones(1000)}, path)
    with zipfile.ZipFile(path) as archive:
        header = archive.read("arrays/0.npy")[:128]
    assert header[10:11] == b"{"
    refused(with_header(path, header[:10] + b'"' + header[11:]), "arrays/0.npy", "obj['w']")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flips=st.lists(st.tuples(st.integers(0, 127), st.integers(0, 255)), min_size=1, max_size=3))
def test_damaged_npy_headers_load_unchanged_or_raise_a_named_checkpoint_error(tmp_path, flips):
    original = tmp_path / "header.ckpt"
    if not original.exists():
        save({"w": np.arange(1000.0)}, original)
    with zipfile.ZipFile(original) as archive:
        header = bytearray(archive.read("arrays/0.npy")[:128])
    for where, value in flips:
        header[where] = value
    damaged = tmp_path / "damaged.ckpt"
    damaged.write_bytes(original.read_bytes())
    try:
        back = load(with_header(damaged, bytes(header)))
    except CheckpointError as error:
        assert str(damaged) in str(error) and "entry 'arrays/0.npy'" in str(error), error
        return
    assert isinstance(back["w"], np.ndarray) and back["w"].nbytes == 8000  # a header still true to the data
