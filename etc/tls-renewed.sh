#!/bin/sh
# tls-renewed.sh — tells a running `transitd serve` that its certificate was
# renewed, and checks that it now presents the new one.
#
# Why it exists: a renewal (certbot, acme.sh, `transitd cert new --force`)
# writes new files; the server reads them on SIGHUP without dropping a
# connection. This script is the deploy hook that closes the loop: it sends
# SIGHUP (to PID, or through systemctl/launchctl when given a service name)
# and then compares the SHA-256 fingerprint the server presents on
# HOST:PORT with the one of CERT, for at most 10 s.
#
#   etc/tls-renewed.sh HOST:PORT CERT PID
#   etc/tls-renewed.sh HOST:PORT CERT systemd:transitd     (systemctl kill -s HUP)
#   etc/tls-renewed.sh HOST:PORT CERT launchd:org.transitd (launchctl kill HUP)
#   certbot renew --deploy-hook 'etc/tls-renewed.sh 127.0.0.1:8443 /etc/letsencrypt/live/NAME/fullchain.pem systemd:transitd'
#
# Exit 0: the server presents the renewed certificate; 1: it still presents
# another one (its log says why: a key that does not match, an unreadable
# file); 2: usage.
set -eu
if [ $# -ne 3 ]; then
  sed -n '2,/^$/s/^# \{0,1\}//p' "$0" >&2
  exit 2
fi
addr=$1 cert=$2 target=$3
fingerprint() { openssl x509 -noout -fingerprint -sha256 | sed 's/.*=//'; }
want=$(fingerprint <"$cert")
case $target in
  systemd:*) systemctl kill -s HUP "${target#systemd:}" ;;
  launchd:*) launchctl kill HUP "system/${target#launchd:}" ;;
  *) kill -HUP "$target" ;;
esac
i=0
while [ $i -lt 50 ]; do
  got=$(openssl s_client -connect "$addr" </dev/null 2>/dev/null | fingerprint 2>/dev/null || true)
  if [ "$got" = "$want" ]; then
    echo "tls-renewed: $addr presents $cert (SHA-256 $want)"
    exit 0
  fi
  i=$((i + 1))
  sleep 0.2
done
echo "tls-renewed: $addr still presents ${got:-nothing} instead of $cert ($want); see the server's log" >&2
exit 1
