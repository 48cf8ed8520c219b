package estate

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	lineRE         = regexp.MustCompile(`line (\d+): `)
	unknownFieldRE = regexp.MustCompile(`^field (\S+) not found in type`)
)

func yamlErrLine(err error) int {
	if m := lineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

func relLine(msg string) int {
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

func stripLine(msg string) string { return lineRE.ReplaceAllString(msg, "") }

func trimYAMLErr(err error) string {
	return strings.TrimPrefix(stripLine(err.Error()), "yaml: ")
}
