"""Several relocatable ELF objects as one: what ``ld -r`` does, minus merging.

The ``llvm`` backend compiles a program's kernels as several LLVM modules
at once (:mod:`ember.backends.cpu`), one object file each; an artifact
holds one object (``program.o``, which MCJIT links on load).
:func:`link_objects` makes that one object from the parts: every section of
every part is kept as it is, as a section of its own (two ``.ltext``
sections are two sections, as in any object with ``-ffunction-sections``),
so no code moves and no offset changes; only indices do.  The symbol tables
become one: each part's local symbols stay (pointing at its sections), a
global defined by one part resolves the others' undefined references to
it, and a name no part defines stays undefined once.  Relocations are
rewritten to the new symbol and section indices; the parts' string tables
become one string table and one section-name table.

The output depends only on the parts and their order (same bytes for the
same parts), and :func:`ember.runtime.elf.read_object` checks it like any
object.  It assumes what LLVM writes for ember: little-endian ELF64, RELA relocations,
fewer than 65280 sections, no section groups; anything else is refused with
a :class:`~ember.errors.RuntimeFailure`, never written wrong.  LLVM's
address-significance table (``.llvm_addrsig``, a hint for a linker's
identical code folding, indexed by symbol) is dropped.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from ember.errors import RuntimeFailure

__all__ = ["link_objects"]

_SHT_SYMTAB, _SHT_STRTAB, _SHT_RELA, _SHT_REL, _SHT_GROUP = 2, 3, 4, 9, 17
_SHT_SYMTAB_SHNDX, _SHT_LLVM_ADDRSIG = 18, 0x6FFF4C03
_SHT_NOBITS = 8
_SHN_LORESERVE = 0xFF00
_STB_LOCAL, _STB_WEAK = 0, 2
_E = "<"  # every target ember compiles for is little-endian
_SECTION = struct.Struct(_E + "IIQQQQIIQQ")
_SYMBOL = struct.Struct(_E + "IBBHQQ")
_RELA = struct.Struct(_E + "QQq")


@dataclass
class _Part:
    """One input object, parsed: its section headers (as tuples of the
    fields of ``Elf64_Shdr``) and its symbols (``Elf64_Sym`` fields, the
    name resolved)."""

    data: bytes
    sections: list[tuple[int, ...]]
    symbols: list[tuple[str, int, int, int, int, int]]  # name, info, other, shndx, value, size
    shstrndx: int

    def section_name(self, offset: int) -> str:
        names = self.sections[self.shstrndx][4] + offset
        return self.data[names : self.data.index(b"\0", names)].decode()


def _parse(data: bytes, which: int) -> _Part:
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise RuntimeFailure(f"object part {which} is not a little-endian ELF64 object")
    e_shoff, e_shnum, e_shstrndx = (
        struct.unpack_from(_E + "Q", data, 40)[0],
        *struct.unpack_from(_E + "HH", data, 60),
    )
    sections = [_SECTION.unpack_from(data, e_shoff + 64 * i) for i in range(e_shnum)]
    kinds = [s[1] for s in sections]
    for bad, what in (
        (_SHT_GROUP, "section groups"),
        (_SHT_REL, "REL relocations"),
        (_SHT_SYMTAB_SHNDX, "extended section indices"),
    ):
        if bad in kinds:
            raise RuntimeFailure(
                f"object part {which} has {what}, which linking parts does not handle"
            )
    symtab = kinds.index(_SHT_SYMTAB)
    _, _, _, _, offset, size, link, _, _, _ = sections[symtab]
    strings = sections[link]
    symbols = []
    for i in range(size // 24):
        name, info, other, shndx, value, sym_size = _SYMBOL.unpack_from(data, offset + 24 * i)
        start = strings[4] + name
        text = data[start : data.index(b"\0", start)].decode() if name else ""
        symbols.append((text, info, other, shndx, value, sym_size))
    return _Part(data, sections, symbols, e_shstrndx)


def link_objects(objects: Sequence[bytes]) -> bytes:
    """One relocatable object holding every section and symbol of
    ``objects`` (LLVM's ELF64 output for one target), references between
    them resolved by name; ``objects[0]``'s header fields (machine, flags)
    are the result's."""
    if len(objects) == 1:
        return objects[0]
    parts = [_parse(data, i) for i, data in enumerate(objects)]
    # Sections kept: all but each part's symbol and string tables and
    # address-significance table, in part order.
    dropped = (_SHT_SYMTAB, _SHT_STRTAB, _SHT_LLVM_ADDRSIG)
    kept: list[tuple[int, int]] = []  # (part, section)
    section_index: list[dict[int, int]] = []
    for p, part in enumerate(parts):
        mapping = {}
        for s, header in enumerate(part.sections):
            if s and header[1] not in dropped:
                mapping[s] = 1 + len(kept)
                kept.append((p, s))
        section_index.append(mapping)
    symtab_index = 1 + len(kept)
    if symtab_index + 3 >= _SHN_LORESERVE:
        raise RuntimeFailure(f"{symtab_index + 3} sections are too many for one object")

    def placed(p: int, shndx: int) -> int:
        if not 0 < shndx < _SHN_LORESERVE:
            return shndx  # undefined, absolute, common
        if shndx not in section_index[p]:
            raise RuntimeFailure(f"object part {p} has a symbol in a table section ({shndx})")
        return section_index[p][shndx]

    # Symbols: every part's locals, then one entry per global name, a
    # definition preferred to a reference and a strong one to a weak one.
    locals_: list[tuple[str, int, int, int, int, int]] = []
    globals_: dict[str, tuple[str, int, int, int, int, int]] = {}
    symbol_index: list[dict[int, int]] = []
    for p, part in enumerate(parts):
        mapping = {0: 0}  # a relocation against no symbol stays so
        for i, (name, info, other, shndx, value, size) in enumerate(part.symbols):
            if i == 0:
                continue
            entry = (name, info, other, placed(p, shndx), value, size)
            if info >> 4 == _STB_LOCAL:
                mapping[i] = 1 + len(locals_)
                locals_.append(entry)
                continue
            current = globals_.get(name)
            if current is None or (current[3] == 0 and shndx != 0):
                globals_[name] = entry
            elif shndx != 0 and current[1] >> 4 != _STB_WEAK:
                if info >> 4 != _STB_WEAK:
                    raise RuntimeFailure(f"symbol {name} is defined by two object parts")
            elif shndx != 0 and info >> 4 != _STB_WEAK:
                globals_[name] = entry  # a strong definition over a weak one
        symbol_index.append(mapping)
    first_global = 1 + len(locals_)
    position = {name: first_global + k for k, name in enumerate(globals_)}
    for p, part in enumerate(parts):
        for i, (name, info, *_) in enumerate(part.symbols):
            if i and info >> 4 != _STB_LOCAL:
                symbol_index[p][i] = position[name]
    strtab = _Strings()
    symtab = bytearray(24)
    for name, info, other, shndx, value, size in (*locals_, *globals_.values()):
        symtab += _SYMBOL.pack(strtab.add(name), info, other, shndx, value, size)

    # Contents after the 64-byte header, each section at its alignment, in
    # order; then the symbol table, its strings, the section names and the
    # section header table.
    shstrtab = _Strings()
    out = bytearray(objects[0][:64])
    headers = [bytes(64)]
    for p, s in kept:
        part = parts[p]
        name, kind, flags, addr, offset, size, link, info, align, entsize = part.sections[s]
        body = b"" if kind == _SHT_NOBITS else part.data[offset : offset + size]
        if kind == _SHT_RELA:
            body = _relocated(body, symbol_index[p])
            link, info = symtab_index, section_index[p][info]
        elif link:
            link = section_index[p].get(link, 0)
        start = _pad(out, align)
        out += body
        headers.append(
            _SECTION.pack(shstrtab.add(part.section_name(name)), kind, flags, addr, start,
                          size, link, info, align, entsize)
        )
    tables = (
        (".symtab", _SHT_SYMTAB, bytes(symtab), symtab_index + 1, first_global, 8, 24),
        (".strtab", _SHT_STRTAB, strtab.data(), 0, 0, 1, 0),
    )
    names = [shstrtab.add(name) for name, *_ in tables] + [shstrtab.add(".shstrtab")]
    tables += ((".shstrtab", _SHT_STRTAB, shstrtab.data(), 0, 0, 1, 0),)
    for name_offset, (_, kind, body, link, info, align, entsize) in zip(names, tables):
        start = _pad(out, align)
        out += body
        headers.append(
            _SECTION.pack(name_offset, kind, 0, 0, start, len(body), link, info, align, entsize)
        )
    section_headers = _pad(out, 8)
    for header in headers:
        out += header
    struct.pack_into(_E + "Q", out, 40, section_headers)  # e_shoff
    struct.pack_into(_E + "HH", out, 60, len(headers), len(headers) - 1)  # e_shnum, e_shstrndx
    return bytes(out)


def _relocated(body: bytes, symbols: dict[int, int]) -> bytes:
    """RELA entries with their symbol indices renumbered."""
    out = bytearray(body)
    for k, (offset, info, addend) in enumerate(_RELA.iter_unpack(body)):
        _RELA.pack_into(out, 24 * k, offset, symbols[info >> 32] << 32 | info & 0xFFFFFFFF, addend)
    return bytes(out)


def _pad(out: bytearray, align: int) -> int:
    """Zeros up to a multiple of ``align``; the offset reached."""
    if align > 1:
        out += bytes(-len(out) % align)
    return len(out)


class _Strings:
    """A string table being built: each name once, after a leading NUL."""

    def __init__(self) -> None:
        self._offsets: dict[str, int] = {"": 0}
        self._data = bytearray(1)

    def add(self, name: str) -> int:
        offset = self._offsets.get(name)
        if offset is None:
            offset = self._offsets[name] = len(self._data)
            self._data += name.encode() + b"\0"
        return offset

    def data(self) -> bytes:
        return bytes(self._data)
