TemplateSource = None
def load_source(): pass
