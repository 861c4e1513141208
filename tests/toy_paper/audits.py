"""toy's privacy audits (``dpsim audit toy``): none yet. Add ``dpsim.audits.Audit`` values that
compare the mechanism's exact privacy loss on worst-case neighbours with samples."""

AUDITS: list = []
