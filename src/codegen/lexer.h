/* Lexer of the kernel language: source text -> an array of tokens.
 *
 * It also runs the tiny preprocessor the language allows: `#include
 * <rk/kernel.h>` (or "rk/kernel.h") and `#pragma once` are dropped, and
 * `#define NAME value` becomes the token CG_TOK_DEFINE (text = NAME), the
 * value's tokens and CG_TOK_DEFINE_END, for the parser to read as a constant
 * definition. Any other directive, string or character literal, or stray
 * character is a diagnostic. Every step consumes at least one character, so
 * lexing is linear in the source.
 */
#ifndef RK_CODEGEN_LEXER_H_
#define RK_CODEGEN_LEXER_H_

#include <stdbool.h>
#include <stdint.h>

#include "codegen/context.h"

typedef enum cg_tok_kind {
  CG_TOK_EOF = 0,
  CG_TOK_IDENT,
  CG_TOK_KEYWORD, /* sub = cg_kw_t */
  CG_TOK_INT,     /* ival, num_type, hex */
  CG_TOK_FLOAT,   /* fval, num_type; text is the spelling without suffix */
  CG_TOK_PUNCT,   /* sub = an ASCII character or a cg_punct_t */
  CG_TOK_DEFINE,  /* text = the macro's name */
  CG_TOK_DEFINE_END,
} cg_tok_kind_t;

/* Keywords: those of the language, the C keywords it refuses (so the error
 * can name them), and the type names it knows. */
#define CG_KEYWORDS(X)               \
  X(VOID, "void")                    \
  X(BOOL, "bool")                    \
  X(UBOOL, "_Bool")                  \
  X(INT, "int")                      \
  X(UNSIGNED, "unsigned")            \
  X(SIGNED, "signed")                \
  X(LONG, "long")                    \
  X(SHORT, "short")                  \
  X(CHAR, "char")                    \
  X(FLOAT, "float")                  \
  X(DOUBLE, "double")                \
  X(INT32, "int32_t")                \
  X(UINT32, "uint32_t")              \
  X(INT64, "int64_t")                \
  X(UINT64, "uint64_t")              \
  X(CONST, "const")                  \
  X(RESTRICT, "restrict")            \
  X(VOLATILE, "volatile")            \
  X(STATIC, "static")                \
  X(INLINE, "inline")                \
  X(EXTERN, "extern")                \
  X(STRUCT, "struct")                \
  X(UNION, "union")                  \
  X(ENUM, "enum")                    \
  X(TYPEDEF, "typedef")              \
  X(IF, "if")                        \
  X(ELSE, "else")                    \
  X(FOR, "for")                      \
  X(WHILE, "while")                  \
  X(DO, "do")                        \
  X(SWITCH, "switch")                \
  X(CASE, "case")                    \
  X(DEFAULT, "default")              \
  X(BREAK, "break")                  \
  X(CONTINUE, "continue")            \
  X(RETURN, "return")                \
  X(GOTO, "goto")                    \
  X(SIZEOF, "sizeof")                \
  X(TRUE, "true")                    \
  X(FALSE, "false")                  \
  X(REGISTER, "register")            \
  X(AUTO, "auto")                    \
  X(ATOMIC, "_Atomic")               \
  X(THREAD_LOCAL, "_Thread_local")   \
  X(ALIGNAS, "_Alignas")             \
  X(ALIGNOF, "_Alignof")             \
  X(STATIC_ASSERT, "_Static_assert") \
  X(GENERIC, "_Generic")             \
  X(NORETURN, "_Noreturn")           \
  X(COMPLEX, "_Complex")             \
  X(IMAGINARY, "_Imaginary")         \
  X(ASM, "asm")                      \
  X(RK_KERNEL, "RK_KERNEL")          \
  X(RK_STENCIL, "RK_STENCIL")        \
  X(RK_STENCIL3D, "RK_STENCIL3D")    \
  X(RK_HANDLER, "RK_HANDLER")        \
  X(RK_SHARED, "RK_SHARED")          \
  X(RK_GRID_POS, "rk_grid_pos_t")    \
  X(SIZE_T, "size_t")                \
  X(INT8, "int8_t")                  \
  X(UINT8, "uint8_t")                \
  X(INT16, "int16_t")                \
  X(UINT16, "uint16_t")              \
  X(PTRDIFF, "ptrdiff_t")            \
  X(INTPTR, "intptr_t")              \
  X(UINTPTR, "uintptr_t")

typedef enum cg_kw {
  CG_KW_NONE_ = 0,
#define CG_KW_ENUM_(name, text) CG_KW_##name,
  CG_KEYWORDS(CG_KW_ENUM_)
#undef CG_KW_ENUM_
      CG_KW_COUNT_
} cg_kw_t;

/* Punctuators of more than one character, from CG_P_FIRST_ on; single
 * characters use their own code ('+', '(' ...), below it. */
typedef enum cg_punct {
  CG_P_FIRST_ = 256,
  CG_P_ARROW = CG_P_FIRST_, /* -> */
  CG_P_INC,                 /* ++ */
  CG_P_DEC,                 /* -- */
  CG_P_SHL,                 /* << */
  CG_P_SHR,                 /* >> */
  CG_P_LE,                  /* <= */
  CG_P_GE,                  /* >= */
  CG_P_EQ,                  /* == */
  CG_P_NE,                  /* != */
  CG_P_ANDAND,              /* && */
  CG_P_OROR,                /* || */
  CG_P_MUL_ASSIGN,          /* *= */
  CG_P_DIV_ASSIGN,          /* /= */
  CG_P_MOD_ASSIGN,          /* %= */
  CG_P_ADD_ASSIGN,          /* += */
  CG_P_SUB_ASSIGN,          /* -= */
  CG_P_SHL_ASSIGN,          /* <<= */
  CG_P_SHR_ASSIGN,          /* >>= */
  CG_P_AND_ASSIGN,          /* &= */
  CG_P_XOR_ASSIGN,          /* ^= */
  CG_P_OR_ASSIGN,           /* |= */
  CG_P_ELLIPSIS,            /* ... */
} cg_punct_t;

/* Numeric types of literals (values of cg_type_kind_t in ast.h). */
typedef struct cg_token {
  uint8_t kind;     /* cg_tok_kind_t */
  uint8_t num_type; /* CG_TY_* of a number */
  bool hex;         /* integer written in hexadecimal */
  uint16_t sub;     /* keyword or punctuator */
  uint32_t len;
  const char *text; /* into the source (numbers: the spelling) */
  cg_loc_t loc;
  uint64_t ival;
  double fval;
} cg_token_t;

typedef struct cg_tokens {
  cg_token_t *v;
  uint32_t n; /* the last token is CG_TOK_EOF */
} cg_tokens_t;

/* Tokenizes ctx->source. Diagnostics jump out through ctx. */
void rk__cg_lex(cg_ctx_t *ctx, cg_tokens_t *out);

/* "void", "->", "'+'"-style spellings for messages. */
const char *rk__cg_kw_spelling(int kw);
/* Writes a token's spelling for a message ("'foo'", "end of file"). */
void rk__cg_token_describe(const cg_token_t *t, char *buf, size_t cap);

#endif /* RK_CODEGEN_LEXER_H_ */
