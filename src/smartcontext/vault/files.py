"""read_file, create_file, move_file, batch_move_files, append_to_file."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import InvalidArgument
from .base import (
    BINARY_SUFFIXES,
    MAX_READ_BYTES,
    TEXT_SUFFIXES,
    VaultBase,
    tool,
    with_default_suffix,
)
from ..safeio import read_regular
from .paths import atomic_write, move_no_clobber
from .responses import ok
from ..validate import ToolError


class FileTools(VaultBase):
    @tool
    def read_file(self, path: str, offset: int = 0, length: int = 4000) -> dict[str, Any]:
        file_path = self._existing_file(path, by_name=True)
        rel = self._rel(file_path)
        try:
            if file_path.stat().st_size > MAX_READ_BYTES:
                raise ToolError(f"{rel} is larger than {MAX_READ_BYTES // 1_000_000} MB; read_file reads text notes")
            data = read_regular(file_path)
        except OSError as exc:
            raise ToolError(f"Reading file failed: {exc.strerror or exc}") from None
        if b"\x00" in data[:8192]:
            raise ToolError(f"{rel} is not a text file")
        # Same text as Path.read_text(): universal newlines, so offsets match what a model sees.
        content = data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
        total = len(content)

        if offset == 0 and total <= length:
            return ok(content=content, path=rel)
        if offset >= total:
            raise ToolError(f"offset {offset} exceeds file length {total}")

        chunk = content[offset : offset + length]
        end_pos = offset + length
        parts = []
        if offset > 0:
            parts.append(f"[Continuing from char {offset} of {total}]\n\n")
        parts.append(chunk)
        if end_pos < total:
            parts.append(f"\n\n[... truncated at char {end_pos} of {total}. Use offset={end_pos} to read more.]")
        return ok(content="".join(parts), path=rel)

    @tool
    def create_file(self, path: str, content: str, overwrite: bool = False) -> dict[str, Any]:
        if path.strip().endswith(("/", "\\")):
            raise ToolError(f"{path} names a folder; give a file name such as {path.strip()}Note.md")
        target = self._writable(with_default_suffix(path.strip()))
        rel = self._rel(target)
        if target.is_dir():
            raise ToolError(f"{rel} is a folder")
        with self._write_lock():
            existed = target.exists()
            if existed and not overwrite:
                raise ToolError(f"File already exists: {rel}. Set overwrite=true to replace it.")
            try:
                atomic_write(target, content.encode("utf-8"), overwrite=overwrite)
            except FileExistsError:
                raise ToolError(f"File already exists: {rel}. Set overwrite=true to replace it.") from None
        verb = "Overwrote" if existed else "Created"
        return ok(f"{verb} {rel}", path=rel, **self._notify([rel]))

    @tool
    def move_file(self, source: str, destination: str) -> dict[str, Any]:
        outcome = self._move(source, destination)
        if not outcome["success"]:
            raise ToolError(outcome["error"])
        notes = self._notify([outcome["source"], outcome["destination"]])
        return ok(outcome["message"], source=outcome["source"], destination=outcome["destination"],
                  path=outcome["destination"], **notes)

    @tool
    def batch_move_files(self, moves: list[dict[str, str]]) -> dict[str, Any]:
        results = [self._move(m["source"], m["destination"]) for m in moves]
        moved = [r for r in results if r["success"]]
        changed = [p for r in moved for p in (r["source"], r["destination"])]
        failed = len(results) - len(moved)
        message = f"Moved {len(moved)} of {len(results)} files"
        if failed:
            message += f"; {failed} failed (see results)"
        return ok(message, results=results, moved=len(moved), failed=failed, **self._notify(changed))

    @tool
    def append_to_file(self, path: str, content: str) -> dict[str, Any]:
        if content == "":
            raise ToolError("content cannot be empty")
        target = self._existing_file(path)
        rel = self._rel(target)
        self._writable(rel)
        with self._write_lock():  # read, add, write back: no concurrent append is lost
            data = read_regular(target)
            if b"\x00" in data[:8192]:
                raise ToolError(f"{rel} is not a text file")
            newline = b"\r\n" if b"\r\n" in data else b"\n"
            addition = content.encode("utf-8")
            if newline == b"\r\n":
                addition = addition.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
            separator = newline if data and not data.endswith(b"\n") else b""
            atomic_write(target, data + separator + addition, overwrite=True)
        return ok(f"Appended to {rel}", path=rel, **self._notify([rel]))

    # -- helpers

    def _writable(self, rel: str) -> Path:
        target = self._resolve(rel)
        suffix = target.suffix.lower()
        if suffix in BINARY_SUFFIXES:
            raise InvalidArgument(f"{rel}: {suffix} is a binary format; these tools write text (.md, .txt, ...)")
        return target

    def _move(self, source: Any, destination: Any) -> dict[str, Any]:
        """One move, reported as a dict so batches can list each outcome."""
        report: dict[str, Any] = {"source": source, "destination": destination}
        try:
            src = self._existing_file(source)
            src_rel = self._rel(src)
            report["source"] = src_rel
            dest_text = destination.strip().replace("\\", "/")
            if not dest_text:
                raise InvalidArgument("destination cannot be empty")
            dest_as_folder = self._resolve(dest_text, allow_root=True)
            if dest_text.endswith("/") or dest_as_folder.is_dir():
                dest = self._resolve(f"{self._rel(dest_as_folder)}/{src.name}" if dest_as_folder != self.root
                                     else src.name)
            else:
                suffix = PurePosixPath(dest_text).suffix.lower()
                if suffix not in TEXT_SUFFIXES and suffix not in BINARY_SUFFIXES and src.suffix:
                    dest_text += src.suffix  # "Archive/Plan" keeps the source's extension
                dest = self._resolve(dest_text)
            dest_rel = self._rel(dest)
            report["destination"] = dest_rel
            if dest == src:
                raise InvalidArgument(f"{src_rel} is already at {dest_rel}")
            if dest.exists() and not (dest.is_file() and _same_file(src, dest)):
                raise FileExistsError(f"Destination already exists: {dest_rel}")
            with self._write_lock():
                move_no_clobber(src, dest)
        except FileExistsError as exc:
            report.update(success=False, error=str(exc) if "Destination" in str(exc)
                          else f"Destination already exists: {report['destination']}")
            return report
        except Exception as exc:  # each move in a batch fails on its own
            report.update(success=False, error=_describe(exc))
            return report
        report.update(success=True, message=f"Moved {src_rel} to {dest_rel}")
        return report


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False


def _describe(exc: Exception) -> str:
    if isinstance(exc, OSError) and not isinstance(exc, (FileNotFoundError, IsADirectoryError)):
        return f"move failed: {exc.strerror or exc}"
    return str(exc.args[0]) if exc.args else type(exc).__name__
