// Package record holds what both stores read and write alike: the column
// lists of the tables that are the same on SQLite and PostgreSQL, the
// scanners that read those columns back into tether's records, and the
// pieces of a job's row that do not depend on the SQL dialect.
package record

// Scanner reads one row: a *sql.Row or *sql.Rows, a pgx.Row or pgx.Rows.
type Scanner interface{ Scan(dest ...any) error }
