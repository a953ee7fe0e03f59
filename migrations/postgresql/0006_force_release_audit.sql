-- dblock PostgreSQL schema, version 6: a record of every force-release, written by the statement
-- that evicts (so there is no eviction without its record): when, who forced it (the forcing
-- manager's holder string and the role it connected as), whose lease it ended, its mode, and the
-- name's fence before and after. dblock never deletes these rows. Older processes keep working
-- beside this version; their force-releases leave no record.
CREATE TABLE "{{prefix}}force_releases" (
  id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at         timestamptz NOT NULL DEFAULT clock_timestamp(),
  name       text        NOT NULL,
  by_holder  text,
  by_account text        NOT NULL DEFAULT session_user,
  holder     text,
  mode       text        NOT NULL CHECK (mode IN ('exclusive', 'shared')),
  old_fence  bigint      NOT NULL,
  new_fence  bigint      NOT NULL
);
CREATE INDEX "{{prefix}}force_releases_name" ON "{{prefix}}force_releases" (name, id);
