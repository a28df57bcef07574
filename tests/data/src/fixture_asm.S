/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Symbols with exact extents: fx_asm_sized is 1 byte followed by 15 bytes of padding that no
 * symbol covers; fx_asm_unsized has no size and extends to fx_asm_after. fx_asm_after.cold is
 * a local symbol with a dot in its name, as gcc names the cold part of a function that it
 * splits (-freorder-blocks-and-partition), in .text.unlikely as gcc puts it.
 */
	.text
	.p2align 4
	.globl fx_asm_sized
	.type fx_asm_sized, @function
fx_asm_sized:
	ret
	.size fx_asm_sized, 1
	.fill 15, 1, 0x90

	.globl fx_asm_unsized
	.type fx_asm_unsized, @function
fx_asm_unsized:
	.fill 32, 1, 0x90
	ret

	.p2align 4
	.globl fx_asm_after
	.type fx_asm_after, @function
fx_asm_after:
	ret
	.size fx_asm_after, 1

	.section .text.unlikely, "ax", @progbits
	.type fx_asm_after.cold, @function
fx_asm_after.cold:
	ud2
	.size fx_asm_after.cold, 2

	.section .note.GNU-stack, "", @progbits
