# Reads one boot's serial console (libtest run with --test-threads=1
# --nocapture, between init.sh's PMULAB_BEGIN/END markers) and prints one line
# per test: PASS, FAIL or SKIP, then "PMULAB_TOTAL passed failed skipped".
# A test that prints "SKIP ..." is a skip, except in the hardware test binary
# (hw-*), where nothing may skip: that is a failure. A binary that exits
# non-zero without a failed test (a crash), a test with no result, or a boot
# that never reached PMULAB_DONE (timeout, panic) is a failure too.
function result(kind, what, why) {
  if (kind == "PASS") pass++
  else if (kind == "FAIL") { fail++; binfail++ }
  else skip++
  printf "%s %s %s%s\n", kind, boot, what, (why == "" ? "" : "  -- " why)
}
function finish(word) {
  if (word == "ok") {
    if (skipline != "" && hw) result("FAIL", bin "::" cur, "skipped in the lab: " skipline)
    else if (skipline != "") result("SKIP", bin "::" cur, skipline)
    else result("PASS", bin "::" cur, "")
  } else if (word == "FAILED") result("FAIL", bin "::" cur, lastpanic)
  else result((hw ? "FAIL" : "SKIP"), bin "::" cur, "ignored")
  cur = ""
}
function word(s) {
  if (s == "ok" || s == "FAILED") return s
  if (s ~ /^ignored/) return "ignored"
  return ""
}
BEGIN { pass = fail = skip = 0; done = 0 }
{ sub(/\r$/, "") }
/^PMULAB_BEGIN / {
  bin = $2; sub(/.*\//, "", bin); hw = (bin ~ /^hw-/); sub(/-[0-9a-f]{16}$/, "", bin)
  cur = ""; binfail = 0; inbin = 1; next
}
/^PMULAB_END / {
  if (cur != "") result("FAIL", bin "::" cur, "no result (the test binary died)")
  rc = $3; sub(/^rc=/, "", rc)
  if (rc != 0 && binfail == 0) result("FAIL", bin, "exited with status " rc " without a failed test")
  inbin = 0; cur = ""; next
}
/^PMULAB_DONE/ { done = 1; next }
/^PMULAB_SKIPBIN / { why = $0; sub(/^PMULAB_SKIPBIN [^ ]+ /, "", why); result("SKIP", $2, "not run in the guest: " why); next }
inbin && /^test .* \.\.\. / {
  cur = $2; skipline = ""; lastpanic = ""
  rest = $0; sub(/^test [^ ]+ \.\.\. ?/, "", rest)
  w = word(rest)
  if (w != "") finish(w)
  next
}
inbin && cur != "" {
  if ($0 ~ /^SKIP[ :]/) skipline = $0
  if ($0 ~ /panicked at/) lastpanic = $0
  w = word($0)
  if (w != "") finish(w)
}
END {
  if (!done) result("FAIL", "boot", "the guest did not finish (timeout or kernel panic; see console-" boot ".log)")
  printf "PMULAB_TOTAL %d %d %d %s\n", pass, fail, skip, boot
}
