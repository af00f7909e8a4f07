"""The stream the app draws on writes every frame whole, also when the terminal takes only part of
it: with ``PYTHONUNBUFFERED`` a write(2) cut short by a signal dropped the rest of the frame (an
``--inline`` region was drawn lower from then on, the lines above it scrolled away)."""

from __future__ import annotations

import fcntl
import io
import os
import signal
import sys
import termios
import threading
import time
from collections.abc import Callable

import pytest
from textual.app import App
from textual.drivers.linux_inline_driver import LinuxInlineDriver

from monkey.ui.whole_writes import WholeWrites, whole, whole_frames

ROOM = 4096
"""What the pipe standing for a slow terminal holds (the smallest pipe Linux makes)."""


def unbuffered(fd: int) -> io.TextIOWrapper:
    """``sys.__stderr__`` as Python makes it under ``PYTHONUNBUFFERED``: text straight over the descriptor."""
    return io.TextIOWrapper(
        io.FileIO(fd, "w", closefd=False), encoding="utf-8", line_buffering=True, write_through=True
    )


def _queued(fd: int) -> int:
    return int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"), sys.byteorder)


def received_when_cut_short(write: Callable[[int, str], object], text: str) -> str:
    """What a reader gets of ``write(fd, text)`` on a pipe that has room for 4 KiB, when a signal
    reaches the writer while it waits for more room (write(2) returns what it wrote so far)."""
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, ROOM)
    writer = threading.get_ident()
    got = bytearray()

    def interrupt_then_read() -> None:
        deadline = time.monotonic() + 30  # only a bound on a broken run: the pipe fills at once
        while _queued(read_end) < ROOM and time.monotonic() < deadline:
            time.sleep(0.001)
        signal.pthread_kill(writer, signal.SIGUSR1)  # the writer is in write(2), the pipe full
        while chunk := os.read(read_end, 65536):
            got.extend(chunk)

    previous = signal.signal(signal.SIGUSR1, lambda *_: None)  # a handler: the signal interrupts
    reader = threading.Thread(target=interrupt_then_read)
    reader.start()
    try:
        write(write_end, text)
    finally:
        os.close(write_end)
        reader.join()
        os.close(read_end)
        signal.signal(signal.SIGUSR1, previous)
    return got.decode()


FRAME = "".join(f"\x1b[48;5;233mline {n:03d} · " + "x" * 100 + "\x1b[0m\n" for n in range(64)) + "\x1b[63A\r"
"""An inline frame of 64 lines (about 8 KiB), and the move back to its top."""


def test_a_frame_the_terminal_takes_part_of_arrives_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    def draw(fd: int, text: str) -> None:
        monkeypatch.setattr(sys, "__stderr__", unbuffered(fd))
        with whole_frames():  # what run_app runs the app in
            terminal = sys.__stderr__  # what Textual's driver takes when the app starts
            assert terminal is not None
            terminal.write(text)  # what it does with each frame
            terminal.flush()

    assert received_when_cut_short(draw, FRAME) == FRAME


async def test_the_app_draws_on_the_whole_writing_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    read_end, write_end = os.pipe()
    try:
        stream = unbuffered(write_end)
        monkeypatch.setattr(sys, "__stderr__", stream)
        with whole_frames():
            driver = LinuxInlineDriver(App())  # made when the app starts, inside run_app's whole_frames
            assert isinstance(driver._file, WholeWrites)
            driver.write("frame")
            driver.flush()
        assert sys.__stderr__ is stream  # given back when the app has ended
        assert os.read(read_end, 100) == b"frame"
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_stream_without_a_descriptor_is_kept() -> None:
    captured = io.StringIO()
    assert whole(captured) is captured
