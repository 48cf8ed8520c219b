package console

// LoginBurst is the failed logins a source may make at once (tests).
const LoginBurst = loginBurst

// Mangled is a secret with its first character changed (tests).
var Mangled = mangled
