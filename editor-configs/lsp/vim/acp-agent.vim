" acp-agent as a language server in Vim with vim-lsp: put in ~/.vimrc (vim-lsp runs it once it is set up).
" :LspCodeAction offers "Fix this problem" and "Explain this".
augroup acp_agent_lsp
  autocmd!
  autocmd User lsp_setup call lsp#register_server({
        \ 'name': 'acp-agent',
        \ 'cmd': {server_info -> ['/absolute/path/to/acp-agent/.venv/bin/acp-agent', 'lsp']},
        \ 'allowlist': ['python', 'javascript', 'typescript', 'rust', 'go'],
        \ })
augroup END
