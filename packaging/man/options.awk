# SPDX-License-Identifier: Apache-2.0
# The OPTIONS section of ignis(8) from `ignis --print-reference` (a markdown table:
# flag | environment | file key | default | meaning), so the man page cannot drift from
# the option table. Usage: ignis --print-reference | awk -f options.awk
function roff(s) {
	gsub(/\\/, "\\e", s)
	gsub(/`/, "", s)
	gsub(/-/, "\\-", s)
	sub(/^[.']/, "\\\\\\&&", s)
	return s
}
function trim(s) {
	sub(/^[ \t]+/, "", s)
	sub(/[ \t]+$/, "", s)
	return s
}
NR <= 2 { next }
{
	n = split($0, f, "|")
	flag = trim(f[2]); env = trim(f[3]); key = trim(f[4]); def = trim(f[5]); what = trim(f[6])
	print ".TP"
	if (flag ~ /none: secret/)
		print ".B " roff(env)
	else
		print ".B " roff(flag)
	print roff(what) "."
	more = ""
	if (env != "" && flag !~ /none: secret/)
		more = "Environment: " roff(env)
	if (key != "")
		more = more (more != "" ? "; " : "") "file key: " roff(key)
	if (def != "")
		more = more (more != "" ? "; " : "") "default: " roff(def)
	if (more != "") {
		print ".br"
		print more "."
	}
}
