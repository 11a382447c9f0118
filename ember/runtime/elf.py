"""Checking an ELF relocatable object before LLVM's JIT linker sees it.

MCJIT trusts the object it links: a truncated file, a section or symbol
pointing past the end, an unknown relocation type or a symbol nothing
defines crashes or aborts the process instead of raising.  :func:`read_object`
checks, in Python, everything the linker relies on — the header (ELF64,
this machine's byte order and architecture, a relocatable object), that
every section, symbol and relocation lies inside the file and its section,
that symbol names are inside the string table, that relocations point
within their symbol's section, and (on x86-64) that every relocation has a
type the JIT linker implements — and returns the symbol table.  It cannot
tell whether the machine code itself (nor an addend that points to the
wrong place inside the right section) is correct: that is why loading an
artifact is as trusting as loading a shared library.
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass

from ember.errors import ArtifactError

# e_machine values by LLVM triple architecture.
MACHINES = {"x86_64": 62, "aarch64": 183, "riscv64": 243, "powerpc64le": 21}

_ET_REL = 1
_SHT_SYMTAB, _SHT_STRTAB, _SHT_RELA, _SHT_NOBITS, _SHT_REL = 2, 3, 4, 8, 9
_SHF_EXECINSTR = 0x4
_SHN_UNDEF, _SHN_LORESERVE, _SHN_ABS, _SHN_COMMON = 0, 0xFF00, 0xFFF1, 0xFFF2
STT_OBJECT, STT_FUNC = 1, 2

# Relocation types RuntimeDyldELF implements for x86-64 (others hit
# llvm_unreachable) -> the bytes each patches: NONE, 64, PC32, PLT32,
# GOTPCREL, 32, 32S, PC64, GOTOFF64, GOTPC32, GOT64, GOTPCREL64, GOTPC64,
# GOTPCRELX, REX_GOTPCRELX.
_X86_64_RELOCATIONS = {
    0: 0, 1: 8, 2: 4, 4: 4, 9: 4, 10: 4, 11: 4, 24: 8, 25: 8, 26: 4, 27: 8,
    28: 8, 29: 8, 41: 4, 42: 4,
}
_MAX_ALIGNMENT = 1 << 16
_MAX_NOBITS = 1 << 32  # zero-filled sections the JIT would allocate


@dataclass(frozen=True)
class Section:
    name: str
    kind: int
    flags: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int


@dataclass(frozen=True)
class Symbol:
    name: str
    kind: int  # STT_*
    section: int  # section index, or a reserved SHN_* value
    value: int
    size: int

    @property
    def defined(self) -> bool:
        return self.section != _SHN_UNDEF


@dataclass(frozen=True)
class ObjectFile:
    """What :func:`read_object` found: sections and named symbols."""

    data: bytes
    sections: tuple[Section, ...]
    symbols: dict[str, Symbol]

    @property
    def undefined(self) -> list[str]:
        """Names the object uses but does not define (the linker must find them)."""
        return sorted(name for name, s in self.symbols.items() if not s.defined)

    def function(self, name: str) -> Symbol | None:
        """Defined function ``name`` in an executable section, or None."""
        symbol = self.symbols.get(name)
        if (
            symbol is None
            or symbol.kind != STT_FUNC
            or not 0 < symbol.section < len(self.sections)
            or not self.sections[symbol.section].flags & _SHF_EXECINSTR
        ):
            return None
        return symbol

    def object_bytes(self, name: str) -> bytes | None:
        """The initial contents of data object ``name``, or None if it has none."""
        symbol = self.symbols.get(name)
        if symbol is None or symbol.kind != STT_OBJECT:
            return None
        if not 0 < symbol.section < len(self.sections):
            return None
        section = self.sections[symbol.section]
        if section.kind == _SHT_NOBITS:
            return None
        start = section.offset + symbol.value
        return self.data[start : start + symbol.size]


class _Bad(Exception):
    pass


def read_object(data: bytes, machine: str, what: str) -> ObjectFile:
    """Check ``data`` is a sound relocatable ELF object for ``machine`` (an
    LLVM triple's architecture, e.g. ``x86_64``); raise :class:`ArtifactError`
    naming ``what`` and the problem otherwise."""
    try:
        return _read(data, machine)
    except _Bad as e:
        raise ArtifactError(f"{what} is not a usable object file: {e}") from None
    except (struct.error, IndexError, UnicodeDecodeError) as e:
        raise ArtifactError(f"{what} is not a usable object file: {e}") from None


def _read(data: bytes, machine: str) -> ObjectFile:
    if len(data) < 64 or data[:4] != b"\x7fELF":
        raise _Bad("no ELF header")
    if data[4] != 2:
        raise _Bad("not a 64-bit ELF object")
    little = sys.byteorder == "little"
    if data[5] != (1 if little else 2):
        raise _Bad(f"not {sys.byteorder}-endian, as this machine is")
    e = "<" if little else ">"
    header = struct.unpack_from(e + "HHIQQQIHHHHHH", data, 16)
    e_type, e_machine, e_shoff = header[0], header[1], header[5]
    e_shentsize, e_shnum, e_shstrndx = header[10], header[11], header[12]
    if e_type != _ET_REL:
        raise _Bad(f"ELF type {e_type}, not a relocatable object (1)")
    expected = MACHINES.get(machine)
    if expected is not None and e_machine != expected:
        raise _Bad(f"built for ELF machine {e_machine}, this is {machine} ({expected})")
    if e_shentsize != 64 or not 0 < e_shnum < _SHN_LORESERVE or e_shstrndx >= e_shnum:
        raise _Bad("malformed section header table")
    if e_shoff + 64 * e_shnum > len(data):
        raise _Bad("the section header table lies past the end of the file")

    raw_sections = [
        struct.unpack_from(e + "IIQQQQIIQQ", data, e_shoff + 64 * i)
        for i in range(e_shnum)
    ]
    for i, (_, kind, _, _, offset, size, link, _, align, _) in enumerate(raw_sections):
        if kind != _SHT_NOBITS and offset + size > len(data):
            raise _Bad(f"section {i} lies past the end of the file")
        if kind == _SHT_NOBITS and size > _MAX_NOBITS:
            raise _Bad(f"section {i} asks for {size} zero-filled bytes")
        if align > _MAX_ALIGNMENT or align & (align - 1):
            raise _Bad(f"section {i} has alignment {align}")
        if link >= e_shnum:
            raise _Bad(f"section {i} links to section {link}, which does not exist")
    names = raw_sections[e_shstrndx]
    sections = tuple(
        Section(
            _string(data, names[4], names[5], s[0]), s[1], s[2], s[4], s[5], s[6], s[7], s[9]
        )
        for s in raw_sections
    )
    symtabs = [i for i, s in enumerate(sections) if s.kind == _SHT_SYMTAB]
    if len(symtabs) != 1:
        raise _Bad(f"{len(symtabs)} symbol tables, expected one")
    symtab = sections[symtabs[0]]
    strtab = sections[symtab.link]
    if symtab.entsize != 24 or symtab.size % 24 or strtab.kind != _SHT_STRTAB:
        raise _Bad("malformed symbol table")
    count = symtab.size // 24
    symbols: dict[str, Symbol] = {}
    placed: list[tuple[int, int]] = [(_SHN_UNDEF, 0)]  # (section, value) by index
    for i in range(1, count):
        st_name, st_info, _, st_shndx, st_value, st_size = struct.unpack_from(
            e + "IBBHQQ", data, symtab.offset + 24 * i
        )
        if st_shndx >= _SHN_LORESERVE and st_shndx not in (_SHN_ABS, _SHN_COMMON):
            raise _Bad(f"symbol {i} has reserved section index {st_shndx:#x}")
        if _SHN_UNDEF < st_shndx < _SHN_LORESERVE:
            if st_shndx >= e_shnum:
                raise _Bad(f"symbol {i} is in section {st_shndx}, which does not exist")
            section = sections[st_shndx]
            if section.kind != _SHT_NOBITS and st_value + st_size > section.size:
                raise _Bad(f"symbol {i} lies past the end of its section")
        placed.append((st_shndx, st_value))
        name = _string(data, strtab.offset, strtab.size, st_name)
        if name and (st_info >> 4) != 0:  # global and weak symbols, not locals
            symbols[name] = Symbol(name, st_info & 0xF, st_shndx, st_value, st_size)
    for i, section in enumerate(sections):
        if section.kind in (_SHT_RELA, _SHT_REL):
            _check_relocations(data, e, sections, i, symtabs[0], placed, machine)
    return ObjectFile(data, sections, symbols)


def _string(data: bytes, offset: int, size: int, index: int) -> str:
    if index >= size:
        raise _Bad(f"a name lies outside its string table (offset {index})")
    end = data.find(b"\0", offset + index, offset + size)
    if end < 0:
        raise _Bad("a name in a string table is not terminated")
    return data[offset + index : end].decode("utf-8")


def _check_relocations(
    data: bytes,
    e: str,
    sections: tuple[Section, ...],
    index: int,
    symtab: int,
    placed: list[tuple[int, int]],
    machine: str,
) -> None:
    """Each relocation patches bytes inside its section, names an existing
    symbol, has a type the JIT linker implements, and (with an addend) points
    within its symbol's section, or near an undefined symbol — give or take
    the few bytes PC-relative encodings subtract."""
    section = sections[index]
    entsize = 24 if section.kind == _SHT_RELA else 16
    if section.entsize != entsize or section.size % entsize:
        raise _Bad(f"relocation section {index} has malformed entries")
    if section.link != symtab or not 0 < section.info < len(sections):
        raise _Bad(f"relocation section {index} refers to the wrong sections")
    target = sections[section.info]
    for k in range(section.size // entsize):
        entry = section.offset + entsize * k
        r_offset, r_info = struct.unpack_from(e + "QQ", data, entry)
        kind, symbol = r_info & 0xFFFFFFFF, r_info >> 32
        if symbol >= len(placed):
            raise _Bad(
                f"relocation {k} of section {index} names symbol {symbol}, which does "
                "not exist"
            )
        width = 4
        if machine == "x86_64":
            if kind not in _X86_64_RELOCATIONS:
                raise _Bad(
                    f"relocation {k} of section {index} has type {kind}, which the JIT "
                    "linker does not implement"
                )
            width = _X86_64_RELOCATIONS[kind]
        if r_offset + width > target.size:
            raise _Bad(
                f"relocation {k} of section {index} patches past the end of its section"
            )
        if section.kind == _SHT_RELA:
            (addend,) = struct.unpack_from(e + "q", data, entry + 16)
            where = f"relocation {k} of section {index}"
            _check_addend(sections, placed[symbol], addend, where)


_ADDEND_SLACK = 16


def _check_addend(
    sections: tuple[Section, ...], placed: tuple[int, int], addend: int, what: str
) -> None:
    shndx, value = placed
    if shndx == _SHN_UNDEF:
        if abs(addend) > _ADDEND_SLACK:
            raise _Bad(f"{what} points {addend} bytes away from an undefined symbol")
    elif shndx < _SHN_LORESERVE:
        size = sections[shndx].size
        if not -_ADDEND_SLACK <= value + addend <= size + _ADDEND_SLACK:
            raise _Bad(f"{what} points outside the section of its symbol")
