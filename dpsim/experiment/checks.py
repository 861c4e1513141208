"""placeholder"""
from dataclasses import dataclass
@dataclass(frozen=True)
class SlopeCheck:
    name: str
@dataclass(frozen=True)
class TrendCheck:
    name: str
