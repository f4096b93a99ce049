" Loads the vim-lsp snippet $SNIPPET with a stand-in vim-lsp first on 'runtimepath'
" (vim_lsp_standin/), fires vim-lsp's User lsp_setup event, and quits; the stand-in
" writes the server the snippet registered to $OUT.
execute 'set runtimepath^=' . fnameescape(expand('<sfile>:p:h') . '/vim_lsp_standin')
execute 'source' fnameescape($SNIPPET)
doautocmd User lsp_setup
qall!
