#!/bin/sh
# The guest agent: runs the host's commands, one request a line on stdin, and answers
# on stdout. Everything variable travels in base64, whose alphabet has no space and no
# newline, so a frame line can never be mistaken for output.
#   host → guest: OFLREQ <id> <timeout_s> <base64 of a sh script>
#   guest → host: OFLOUT <id> / base64 lines of stdout / OFLERR <id> / base64 lines of
#                 stderr / OFLEND <id> <exit status>
# A command still running after timeout_s is killed (status 137). Lines that are not a
# request (noise on the line before the host connected) are ignored.
echo "OFLHELLO $(uname -r)"
while read -r tag id limit script; do
  [ "$tag" = OFLREQ ] || continue
  echo "$script" | base64 -d > /tmp/ofl-cmd.sh
  timeout -s KILL "$limit" sh /tmp/ofl-cmd.sh </dev/null >/tmp/ofl-out 2>/tmp/ofl-err
  status=$?
  echo "OFLOUT $id"
  base64 /tmp/ofl-out
  echo "OFLERR $id"
  base64 /tmp/ofl-err
  echo "OFLEND $id $status"
done
