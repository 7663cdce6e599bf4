"""Byte sizes as nccl-tests writes them: 8, 1K, 64M, 1G (powers of 1024)."""

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    t = text.strip().upper().removesuffix("B")
    unit = t[-1] if t and t[-1] in _UNITS else ""
    number = t[: len(t) - len(unit)] if unit else t
    if not number or not number.replace(".", "", 1).isdigit():
        raise ValueError(f"not a size: {text!r}")
    return int(float(number) * _UNITS[unit])


def format_size(n: int) -> str:
    for unit in ("G", "M", "K"):
        if n >= _UNITS[unit] and n % _UNITS[unit] == 0:
            return f"{n // _UNITS[unit]}{unit}"
    return str(n)
