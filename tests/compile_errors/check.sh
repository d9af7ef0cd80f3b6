#!/usr/bin/env bash
# Compiles a file that must not compile and checks that the compiler's error carries the
# message written on its first line ("// expect: ...").
set -u
compiler=$1 include=$2 file=$3
expect=$(sed -n '1s#^// expect: ##p' "$file")
out=$("$compiler" -std=c++20 -fsyntax-only -I"$include" $(pkg-config --cflags absl_flat_hash_map 2>/dev/null) "$file" 2>&1)
if [ $? -eq 0 ]; then echo "FAIL: $file compiled but must not"; exit 1; fi
if ! grep -qF -- "$expect" <<<"$out"; then
  echo "FAIL: $file: the error does not say: $expect"; echo "$out" | head -20; exit 1
fi
errors=$(grep -c "error:" <<<"$out")
if [ "$errors" -gt 3 ]; then echo "FAIL: $file: $errors errors, expected one clear one"; echo "$out" | grep "error:"; exit 1; fi
echo "ok: $file: $expect"
