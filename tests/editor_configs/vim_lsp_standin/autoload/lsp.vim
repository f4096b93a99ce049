" A stand-in for vim-lsp's autoload/lsp.vim: lsp#register_server writes the server it is
" given to $OUT as JSON (its cmd called as vim-lsp calls it).
function! lsp#register_server(info) abort
  let l:server = {'name': a:info.name, 'cmd': a:info.cmd({}), 'allowlist': a:info.allowlist}
  call writefile([json_encode(l:server)], $OUT)
endfunction
