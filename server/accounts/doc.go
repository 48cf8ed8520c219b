// Package accounts keeps the principals of myriarchd's admin API and
// console: local users with a password (argon2id) and API keys for
// scripts, each with a role of package access, optionally scoped to
// fleets. A principal never grants more than it has: the users and keys
// it creates have at most its role, on at most its fleets. The last user
// with the admin role over every fleet cannot be deleted or demoted.
package accounts
