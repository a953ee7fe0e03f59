CREATE INDEX example_accounts_owner ON example_accounts (owner);
