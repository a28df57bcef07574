// SPDX-License-Identifier: Apache-2.0
/*
 * Demangling through libiberty, the demangler of binutils and GDB: Itanium C++ ABI names
 * (itanium-cxx-abi.github.io/cxx-abi/abi.html#mangling) and Rust's legacy and v0 schemes
 * (rust-lang.github.io/rfcs/2603-rust-symbol-name-mangling-v0.html).
 */
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer_internal.h"

char *sym_demangle(const char *name)
{
	char *out;

	/* Mangled names start with _Z (Itanium, and Rust legacy inside it) or _R (Rust v0),
	 * possibly behind extra underscores on some targets. */
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R' && name[1] != '_'))
		return NULL;
	if (strlen(name) >= SYM_MAX_NAME)
		return NULL;
	/* Rust first: a legacy Rust name is also a valid Itanium name, whose C++ reading
	 * would keep the hash ("::h0123456789abcdef"). Without DMGL_VERBOSE the hash goes. */
	out = rust_demangle(name, 0);
	if (!out)
		out = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
	if (out && strlen(out) >= SYM_MAX_NAME)
		out[SYM_MAX_NAME - 1] = '\0';
	return out;
}
