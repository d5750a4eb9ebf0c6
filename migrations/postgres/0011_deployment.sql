-- Facts about the deployment that the command line needs and only the server knows: the
-- public URL it serves under (issue 35: `rehome users invite-link` printed links to
-- 127.0.0.1:8080 unless REHOME_PUBLIC_URL was in the CLI's own environment).
CREATE TABLE deployment (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
