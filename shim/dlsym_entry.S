/* The shim's exported dlsym (dlsym_reach.h). x86-64 only (the one platform the shim is built and
   checked for): a lookup that is not the shim's business reaches the next dlsym (glibc_dlsym.h)
   by a jump, never a call, so that it sees the original caller's return address (RTLD_NEXT is
   relative to it; an LD_AUDIT auditor's la_symbind names it); a C function cannot promise a tail
   call. <cet.h> marks the entry for indirect branch tracking and the object for CET, as the
   compiler marks the C++ objects when it is told to (-fcf-protection): one unmarked object would
   unmark the whole shim. */
#if !defined(__x86_64__)
#error "the shim's dlsym is written for x86-64 only"
#endif
#include <cet.h>
        .text
        .globl  dlsym
        .type   dlsym, @function
        .p2align 4
dlsym:
        .cfi_startproc
        _CET_ENDBR
        test    %rdi, %rdi              /* RTLD_DEFAULT */
        je      1f
        cmp     $-1, %rdi               /* RTLD_NEXT */
        je      1f
        /* A lookup in a handle: the shim's business only for one of the names it interposes. */
        push    %rdi
        .cfi_adjust_cfa_offset 8
        push    %rsi
        .cfi_adjust_cfa_offset 8
        sub     $8, %rsp                /* the call below on a 16-byte boundary */
        .cfi_adjust_cfa_offset 8
        call    cudnn_fastpath_dlsym_wants
        add     $8, %rsp
        .cfi_adjust_cfa_offset -8
        pop     %rsi
        .cfi_adjust_cfa_offset -8
        pop     %rdi
        .cfi_adjust_cfa_offset -8
        test    %al, %al
        jne     cudnn_fastpath_dlsym_in_handle
1:      mov     cudnn_fastpath_next_dlsym(%rip), %rax   /* an aligned load: atomic on x86-64 */
        test    %rax, %rax
        je      2f
        jmp     *%rax
2:      push    %rdi
        .cfi_adjust_cfa_offset 8
        push    %rsi
        .cfi_adjust_cfa_offset 8
        sub     $8, %rsp
        .cfi_adjust_cfa_offset 8
        call    cudnn_fastpath_find_next_dlsym
        add     $8, %rsp
        .cfi_adjust_cfa_offset -8
        pop     %rsi
        .cfi_adjust_cfa_offset -8
        pop     %rdi
        .cfi_adjust_cfa_offset -8
        jmp     *%rax
        .cfi_endproc
        .size   dlsym, .-dlsym
        .section .note.GNU-stack,"",@progbits
