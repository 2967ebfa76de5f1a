-- Records now name each seat by its bot and keep only the public part of a fault's
-- detail (never a command line, a path of the host's or a bot's stderr). The
-- details copied here for the bots' pages before that may quote them: they are
-- cleared for the kinds that could (the record itself still holds the whole text,
-- for the host, and the pages show a record made before this by its faults' kinds).
UPDATE faults SET detail = '' WHERE kind IN ('spawn', 'handshake', 'crash', 'memory');
