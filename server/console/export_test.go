package console

// LoginBurst is the failed logins a source may make at once (tests).
const LoginBurst = loginBurst
