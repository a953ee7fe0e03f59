-- dblock SQLite schema, version 4: the lock file's clock. Expiries were microseconds since the
-- Unix epoch on each process's wall clock, so a wall-clock step (NTP, `date`) in one process
-- moved every lease it saw. They are now on a clock that steps do not move: this row's base plus
-- the machine's CLOCK_BOOTTIME, in microseconds, for the boot named by boot_id. The first process
-- of a new boot moves the base above every time stored in the file, so rows of an earlier boot
-- count as expired. '' (never set): the first process to use the file starts the scale at its
-- wall clock, so that leases taken before this upgrade keep their time.
CREATE TABLE "{{prefix}}clock" (
  id      INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
  boot_id TEXT    NOT NULL,
  base_us INTEGER NOT NULL
);
INSERT INTO "{{prefix}}clock" (id, boot_id, base_us) VALUES (1, '', 0);
