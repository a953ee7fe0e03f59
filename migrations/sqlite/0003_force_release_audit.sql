-- dblock SQLite schema, version 3: a record of every force-release, written in the transaction
-- that evicts (so there is no eviction without its record): when (microseconds since the Unix
-- epoch on SQLite's clock), who forced it (the forcing manager's holder string), whose lease it
-- ended, its mode, and the name's fence before and after. dblock never deletes these rows.
CREATE TABLE "{{prefix}}force_releases" (
  id        INTEGER PRIMARY KEY AUTOINCREMENT,
  at_us     INTEGER NOT NULL,
  name      TEXT    NOT NULL,
  by_holder TEXT,
  holder    TEXT,
  mode      TEXT    NOT NULL CHECK (mode IN ('exclusive', 'shared')),
  old_fence INTEGER NOT NULL,
  new_fence INTEGER NOT NULL
);
CREATE INDEX "{{prefix}}force_releases_name" ON "{{prefix}}force_releases" (name, id);
