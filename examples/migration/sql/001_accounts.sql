CREATE TABLE example_accounts (
  id      bigint PRIMARY KEY,
  owner   text NOT NULL,
  balance bigint NOT NULL DEFAULT 0
);
