// Package access decides who may do what on myriarchd's admin API and
// console: principals (users, API keys, accounts from an OpenID Connect
// provider, and the break-glass admin token), their ordered roles —
// viewer, operator, admin — optionally scoped to fleets, and one table of
// rules, a rule per route, that every request is checked against.
package access
